//! The author's SQL tables in the test kit: SQLite in memory — the engine
//! a Durable Object's storage runs — opened on the first statement and kept
//! across evictions with the rest of what outlives an instance. Rows come
//! back as `{column: value}`, as the runtime's cursor gives them.

use std::cell::RefCell;

use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::Connection;
use serde_json::{Map, Value};

use crate::agent::storage::SqlValue;

/// The author's database, opened when first used.
#[derive(Default)]
pub(crate) struct AuthorSql(RefCell<Option<Connection>>);

impl AuthorSql {
    /// Drops the database (every table), as erasing the agent does.
    pub(crate) fn clear(&self) {
        self.0.borrow_mut().take();
    }
}

fn text(e: rusqlite::Error) -> String {
    e.to_string()
}

fn binding(value: SqlValue) -> Sql {
    match value {
        SqlValue::Null => Sql::Null,
        SqlValue::Boolean(b) => Sql::Integer(i64::from(b)),
        SqlValue::Integer(i) => Sql::Integer(i),
        SqlValue::Float(f) => Sql::Real(f),
        SqlValue::String(s) => Sql::Text(s),
        SqlValue::Blob(b) => Sql::Blob(b),
    }
}

fn column(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => Value::from(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Value::Array(b.iter().map(|byte| Value::from(*byte)).collect()),
    }
}

impl AuthorSql {
    /// Runs `query` (several statements, without bindings, run one after
    /// the other and return no rows).
    pub fn exec(
        &self,
        query: &str,
        bindings: Vec<SqlValue>,
    ) -> Result<Vec<Map<String, Value>>, String> {
        let mut slot = self.0.borrow_mut();
        let conn = match &mut *slot {
            Some(conn) => conn,
            None => slot.insert(Connection::open_in_memory().map_err(text)?),
        };
        let mut statement = match conn.prepare(query) {
            Ok(statement) => statement,
            Err(rusqlite::Error::MultipleStatement) if bindings.is_empty() => {
                return conn.execute_batch(query).map(|()| Vec::new()).map_err(text);
            }
            Err(e) => return Err(text(e)),
        };
        let names: Vec<String> = statement
            .column_names()
            .into_iter()
            .map(String::from)
            .collect();
        let params = rusqlite::params_from_iter(bindings.into_iter().map(binding));
        let mut rows = statement.query(params).map_err(text)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(text)? {
            let mut fields = Map::new();
            for (i, name) in names.iter().enumerate() {
                fields.insert(name.clone(), column(row.get_ref(i).map_err(text)?));
            }
            out.push(fields);
        }
        Ok(out)
    }
}
