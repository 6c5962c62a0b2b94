//! The demo's chat directory: one `ChatDirectory` agent per user (its
//! instance name is the user) keeps that user's chats, each a `ChatAgent`
//! named `<user>~<chat id>`. Its callables `createChat(title?)`,
//! `listChats()`, `renameChat(id, title)` and `deleteChat(id)` are what a
//! page reaches with `useAgent`; deleting a chat erases it (the chat's
//! `destroy()` over Durable Object RPC) before it leaves the list. The list
//! is also the directory's synced state (`{chats: [...]}`), so every tab of
//! the user sees a change at once, and only the methods change it (its
//! tabs are readonly: its own chat is never used). A chat tells its directory when one of
//! its turns ended (`report_activity`: the directory's own RPC method
//! `recordChatActivity`, which no tab can call): the directory stamps the
//! chat's last activity with its own clock and, while the chat has no
//! title of the user's, names it after its first message.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::agent::{AgentDefinition, AgentHandle, CallContext, Callable, SqlValue};
use crate::core::StateSource;

/// The Durable Object binding of the directory class (see wrangler.toml).
pub const DIRECTORY_BINDING: &str = "ChatDirectory";
/// The binding of the chats it keeps.
pub const CHAT_BINDING: &str = "ChatAgent";
/// Between the user and the chat id in a chat's agent name.
pub const SEPARATOR: char = '~';
/// The longest title kept, in characters (a longer one is cut).
pub const MAX_TITLE_CHARS: usize = 120;
/// The title of a chat nobody named yet and that has no message yet.
pub const UNTITLED: &str = "New chat";
/// The most chats one directory keeps.
pub const MAX_CHATS: usize = 500;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS directory_entries (\
     id TEXT PRIMARY KEY, title TEXT NOT NULL, named INTEGER NOT NULL, \
     created_at INTEGER NOT NULL, last_activity INTEGER NOT NULL)";

/// One chat as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatEntry {
    /// The chat's id in this directory.
    pub id: String,
    /// The `ChatAgent` instance a page connects to (`<user>~<id>`).
    pub agent: String,
    pub title: String,
    /// When it was created and when a turn of it last ended (ms since the epoch).
    pub created_at: i64,
    pub last_activity: i64,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    title: String,
    created_at: i64,
    last_activity: i64,
}

/// The agent name of chat `chat` of user `user`.
pub fn chat_agent_name(user: &str, chat: &str) -> String {
    format!("{user}{SEPARATOR}{chat}")
}

/// `(user, chat id)` of a chat's agent name; `None` for an agent no
/// directory keeps.
pub fn split_chat_name(agent: &str) -> Option<(&str, &str)> {
    agent
        .split_once(SEPARATOR)
        .filter(|(user, chat)| !user.is_empty() && !chat.is_empty())
}

/// A title as kept: trimmed, one line, at most [`MAX_TITLE_CHARS`].
pub fn clean_title(title: &str) -> String {
    let one_line: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.chars().take(MAX_TITLE_CHARS).collect()
}

pub struct ChatDirectoryAgent;

impl AgentDefinition for ChatDirectoryAgent {
    fn system_prompt(&self) -> String {
        "You keep a list of chats; you do not chat yourself.".to_string()
    }

    fn initial_state(&self) -> Option<Value> {
        Some(json!({ "chats": [] }))
    }

    /// Its chat is never used: every tab is a viewer of it, so a chat
    /// request (a model call on the directory) or a state write is refused
    /// with `Connection is readonly`; the methods below are marked as
    /// allowed to viewers.
    fn should_connection_be_readonly(
        &self,
        _id: &str,
        _request: &crate::agent::RequestInfo,
    ) -> bool {
        true
    }

    /// The list changes through the methods only.
    fn validate_state(&self, _next: &Value, source: &StateSource) -> Result<(), String> {
        match source {
            StateSource::Server => Ok(()),
            StateSource::Connection(_) => {
                Err("the chat list changes through its methods only".to_string())
            }
        }
    }

    fn callables(&self) -> Vec<Callable> {
        vec![
            Callable::new(
                "createChat",
                |title: Vec<Option<String>>, ctx: CallContext| {
                    let title = title.into_iter().flatten().next();
                    async move { create_chat(&ctx.agent, title.as_deref()) }
                },
            )
            .readonly_safe(),
            Callable::new("listChats", |(): (), ctx: CallContext| async move {
                list_chats(&ctx.agent)
            })
            .readonly_safe(),
            Callable::new(
                "renameChat",
                |(id, title): (String, String), ctx: CallContext| async move {
                    rename_chat(&ctx.agent, &id, &title)
                },
            )
            .readonly_safe(),
            Callable::new(
                "deleteChat",
                |(id,): (String,), ctx: CallContext| async move { delete_chat(&ctx.agent, &id).await },
            )
            .readonly_safe(),
        ]
    }

    /// `recordChatActivity(chatId, title)` over Durable Object RPC: a
    /// chat's turn ended (`title`: its first message, or `null`); answers
    /// whether the directory lists that chat.
    fn rpc_methods(&self) -> Vec<Callable> {
        vec![Callable::new(
            "recordChatActivity",
            |(chat, title): (String, Option<String>), ctx: CallContext| async move {
                record_activity(&ctx.agent, &chat, title.as_deref())
            },
        )]
    }
}

fn storage_error(e: crate::agent::StorageError) -> String {
    format!("the chat list could not be read or written: {e}")
}

fn user_of(agent: &AgentHandle) -> Result<String, String> {
    let user = agent.name();
    match user.is_empty() || user.contains(SEPARATOR) {
        true => Err(format!(
            "a chat directory is named after its user, without `{SEPARATOR}`"
        )),
        false => Ok(user),
    }
}

fn rows(agent: &AgentHandle) -> Result<Vec<Row>, String> {
    let storage = agent.storage();
    storage
        .sql::<Value>(CREATE_TABLE, Vec::new())
        .map_err(storage_error)?;
    storage
        .sql(
            "SELECT id, title, created_at, last_activity FROM directory_entries \
             ORDER BY last_activity DESC, created_at DESC, id",
            Vec::new(),
        )
        .map_err(storage_error)
}

/// The user's chats, the latest activity first.
pub fn list_chats(agent: &AgentHandle) -> Result<Vec<ChatEntry>, String> {
    let user = user_of(agent)?;
    Ok(rows(agent)?
        .into_iter()
        .map(|row| ChatEntry {
            agent: chat_agent_name(&user, &row.id),
            id: row.id,
            title: row.title,
            created_at: row.created_at,
            last_activity: row.last_activity,
        })
        .collect())
}

/// Every tab's state becomes the current list; returns it.
fn publish(agent: &AgentHandle) -> Result<Vec<ChatEntry>, String> {
    let chats = list_chats(agent)?;
    agent.set_state(json!({ "chats": chats }))?;
    Ok(chats)
}

fn find(agent: &AgentHandle, id: &str) -> Result<ChatEntry, String> {
    list_chats(agent)?
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| "this directory has no such chat".to_string())
}

/// A new chat (titled `title`, or [`UNTITLED`] until its first message
/// names it); returns it.
pub fn create_chat(agent: &AgentHandle, title: Option<&str>) -> Result<ChatEntry, String> {
    let user = user_of(agent)?;
    if rows(agent)?.len() >= MAX_CHATS {
        return Err(format!(
            "this directory keeps at most {MAX_CHATS} chats; delete one first"
        ));
    }
    let id = new_chat_id(agent);
    crate::routing::check_agent_name(&chat_agent_name(&user, &id))?;
    let named = title.map(clean_title).filter(|t| !t.is_empty());
    let now = agent.now_ms() as i64;
    agent
        .storage()
        .sql::<Value>(
            "INSERT INTO directory_entries (id, title, named, created_at, last_activity) \
             VALUES (?, ?, ?, ?, ?)",
            vec![
                SqlValue::from(id.as_str()),
                SqlValue::from(named.clone().unwrap_or_else(|| UNTITLED.to_string())),
                SqlValue::from(i64::from(named.is_some())),
                SqlValue::from(now),
                SqlValue::from(now),
            ],
        )
        .map_err(storage_error)?;
    publish(agent)?;
    find(agent, &id)
}

#[cfg(target_arch = "wasm32")]
fn new_chat_id(_agent: &AgentHandle) -> String {
    crate::agent::ids::random_token(12)
}

/// Natively (tests): the clock and a count, unique within one directory.
#[cfg(not(target_arch = "wasm32"))]
fn new_chat_id(agent: &AgentHandle) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        agent.now_ms(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Renames chat `id`; the title stays the user's from then on.
pub fn rename_chat(agent: &AgentHandle, id: &str, title: &str) -> Result<ChatEntry, String> {
    let title = clean_title(title);
    if title.is_empty() {
        return Err("a chat's title may not be empty".to_string());
    }
    find(agent, id)?;
    agent
        .storage()
        .sql::<Value>(
            "UPDATE directory_entries SET title = ?, named = 1 WHERE id = ?",
            vec![SqlValue::from(title), SqlValue::from(id)],
        )
        .map_err(storage_error)?;
    publish(agent)?;
    find(agent, id)
}

/// A turn of chat `id` ended: its last activity is now, and while nobody
/// named it, `title_hint` (its first message) names it. `Ok(false)`: no
/// such chat.
pub fn record_activity(
    agent: &AgentHandle,
    id: &str,
    title_hint: Option<&str>,
) -> Result<bool, String> {
    if find(agent, id).is_err() {
        return Ok(false);
    }
    let now = agent.now_ms() as i64;
    let storage = agent.storage();
    storage
        .sql::<Value>(
            "UPDATE directory_entries SET last_activity = ? WHERE id = ?",
            vec![SqlValue::from(now), SqlValue::from(id)],
        )
        .map_err(storage_error)?;
    if let Some(title) = title_hint.map(clean_title).filter(|t| !t.is_empty()) {
        storage
            .sql::<Value>(
                "UPDATE directory_entries SET title = ? WHERE id = ? AND named = 0",
                vec![SqlValue::from(title), SqlValue::from(id)],
            )
            .map_err(storage_error)?;
    }
    publish(agent)?;
    Ok(true)
}

/// Erases chat `id` (its `destroy()` over RPC), then drops it from the
/// list; returns the list. When the erasure fails the chat stays listed.
pub async fn delete_chat(agent: &AgentHandle, id: &str) -> Result<Vec<ChatEntry>, String> {
    let chat = find(agent, id)?;
    erase(agent, &chat.agent).await?;
    agent
        .storage()
        .sql::<Value>(
            "DELETE FROM directory_entries WHERE id = ?",
            vec![SqlValue::from(id)],
        )
        .map_err(storage_error)?;
    publish(agent)
}

#[cfg(target_arch = "wasm32")]
async fn erase(agent: &AgentHandle, chat_agent: &str) -> Result<(), String> {
    let failed = |e: worker::Error| format!("the chat could not be erased: {e}");
    let stub =
        crate::agent::AgentStub::new(agent.env(), CHAT_BINDING, chat_agent).map_err(failed)?;
    stub.destroy().await.map_err(failed)
}

/// Natively there is no other object to reach: the entry only leaves the list.
#[cfg(not(target_arch = "wasm32"))]
async fn erase(_agent: &AgentHandle, _chat_agent: &str) -> Result<(), String> {
    Ok(())
}

/// The text of the conversation's first user message (what names a chat
/// nobody named).
pub fn first_user_text(messages: &[crate::protocol::UIMessage]) -> Option<String> {
    let first = messages
        .iter()
        .find(|m| m.role == crate::protocol::Role::User)?;
    Some(clean_title(&first.text())).filter(|t| !t.is_empty())
}

/// The chat's side: after one of its turns, a chat named `<user>~<id>`
/// tells user's directory (an agent of any other name does nothing). A
/// failure is logged; the chat's turn is not affected.
#[cfg(target_arch = "wasm32")]
pub async fn report_activity(agent: &AgentHandle) {
    let name = agent.name();
    let Some((user, chat)) = split_chat_name(&name) else {
        return;
    };
    let title = first_user_text(&agent.messages());
    let sent = async {
        let directory = crate::agent::AgentStub::new(agent.env(), DIRECTORY_BINDING, user)?;
        directory
            .call::<bool>("recordChatActivity", &[json!(chat), json!(title)])
            .await
    };
    match sent.await {
        Ok(true) => {}
        Ok(false) => crate::log::write(
            crate::log::LogLevel::Warn,
            "the chat directory does not list this chat",
        ),
        Err(e) => crate::log::write(
            crate::log::LogLevel::Warn,
            &format!("the chat directory could not be told of the turn: {e}"),
        ),
    }
}
