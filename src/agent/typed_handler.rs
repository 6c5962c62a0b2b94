//! The one typed-closure adapter behind every author builder that runs code
//! on JSON (`ServerTool::new`, `Callable::new`, `Callable::streaming`, and so
//! the author's RPC methods): a closure of a typed value (`|input: I| …`),
//! optionally followed by one or two parts of the run's context (a tool's
//! [`ToolContext`](crate::agent::ToolContext), a call's
//! [`CallContext`](crate::agent::CallContext), a streaming call's
//! [`CallStream`](crate::agent::CallStream)), returning a future of
//! `Result<O, E>` where `O` serialises and `E` displays; and its erasure into
//! one JSON-in, JSON-out run the host calls.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use serde::Serialize;
use serde_json::Value;

/// A type-erased run: the result as JSON, or the error text its caller reads.
pub type JsonFuture = Pin<Box<dyn Future<Output = Result<Value, String>>>>;

/// A part of the run's context `Ctx` a closure may take as an argument: the
/// context itself, or (for a streaming call) its stream or its call context.
pub trait FromContext<Ctx>: Sized {
    fn from_context(ctx: &Ctx) -> Self;
}

impl<Ctx: Clone> FromContext<Ctx> for Ctx {
    fn from_context(ctx: &Ctx) -> Self {
        ctx.clone()
    }
}

/// A closure of the typed value `I`, optionally followed by one or two parts
/// of the context `Ctx` ([`FromContext`]). `Shape` tells the closures
/// apart; it is inferred.
pub trait TypedHandler<I, Ctx, Shape>: 'static {
    /// The `Ok` value, serialised as the result.
    type Output: Serialize + 'static;
    /// The error; its text is what the caller (the model, the client) reads.
    type Error: Display + 'static;
    /// The future of one run.
    type Future: Future<Output = Result<Self::Output, Self::Error>> + 'static;

    fn run(&self, input: I, ctx: Ctx) -> Self::Future;
}

/// The impl for a closure of the input followed by the context parts
/// named (each read with [`FromContext`]); its `Shape` is `(I, parts…)`.
macro_rules! closure_of_input_and {
    ($($part:ident),*) => {
        impl<I, Ctx, $($part,)* O, E, F, Fut> TypedHandler<I, Ctx, (I, $($part,)*)> for F
        where
            F: Fn(I, $($part,)*) -> Fut + 'static,
            $($part: FromContext<Ctx>,)*
            Fut: Future<Output = Result<O, E>> + 'static,
            O: Serialize + 'static,
            E: Display + 'static,
        {
            type Output = O;
            type Error = E;
            type Future = Fut;

            #[allow(unused_variables)]
            fn run(&self, input: I, ctx: Ctx) -> Fut {
                self(input, $($part::from_context(&ctx),)*)
            }
        }
    };
}

closure_of_input_and!();
closure_of_input_and!(A);
closure_of_input_and!(A, B);

/// How an erased run reads its input and words its two failures, given the
/// name of the tool or method.
pub(crate) struct Erasure<I> {
    pub read: fn(Value) -> Result<I, serde_json::Error>,
    pub unreadable: fn(&str, serde_json::Error) -> String,
    pub unserializable: fn(&str, serde_json::Error) -> String,
}

/// `handler` as a run of JSON: the input read as `I` (an unreadable one is
/// an error and `handler` is not called), the `Ok` value serialised, the
/// error's text passed on.
pub(crate) fn erase<I, Ctx, Shape, H>(
    name: &str,
    handler: H,
    how: Erasure<I>,
) -> Rc<dyn Fn(Value, Ctx) -> JsonFuture>
where
    I: 'static,
    Ctx: 'static,
    H: TypedHandler<I, Ctx, Shape>,
{
    let handler = Rc::new(handler);
    let name: Rc<str> = Rc::from(name);
    let how = Rc::new(how);
    Rc::new(move |input: Value, ctx: Ctx| -> JsonFuture {
        let (handler, name, how) = (handler.clone(), name.clone(), how.clone());
        Box::pin(async move {
            let input = (how.read)(input).map_err(|e| (how.unreadable)(&name, e))?;
            let output = handler.run(input, ctx).await.map_err(|e| e.to_string())?;
            serde_json::to_value(output).map_err(|e| (how.unserializable)(&name, e))
        })
    })
}
