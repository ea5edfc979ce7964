//! The server: open documents, the protocol's requests and notifications, and the loop that reads
//! them from a connection (diagnostics published after a quiet moment: every change restarts the
//! wait, so a burst of keystrokes is analyzed once).

use crate::analysis::{analyze, same_file};
use crate::document::Document;
use crate::position::Encoding;
use crate::{actions, completion, definition, diagnostics, hover, symbols, tokens};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument,
    Notification as _, PublishDiagnostics,
};
use lsp_types::request::{
    CodeActionRequest, Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, Request as _,
    SemanticTokensFullRequest,
};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, CompletionOptions, HoverProviderCapability,
    InitializeParams, InitializeResult, OneOf, PositionEncodingKind, PublishDiagnosticsParams, SaveOptions,
    SemanticTokensFullOptions, SemanticTokensOptions, SemanticTokensServerCapabilities, ServerCapabilities, ServerInfo,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions, TextDocumentSyncSaveOptions, Uri,
    WorkDoneProgressOptions,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the server waits after a change before it analyzes (unless the client sets
/// `initializationOptions.debounceMs`): 50 ms.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

/// The most documents the server keeps open (1000); a `didOpen` past it is ignored with a message
/// on stderr.
pub const MAX_OPEN_DOCUMENTS: usize = 1000;

/// Why the server stopped other than by `shutdown` and `exit`.
#[derive(Debug)]
pub struct ServerError(String);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServerError {}

impl From<lsp_server::ProtocolError> for ServerError {
    fn from(e: lsp_server::ProtocolError) -> ServerError {
        ServerError(format!("the language client broke the protocol: {e}"))
    }
}

/// The state of a language server: the open documents and what the client said at `initialize`.
/// [`Server::handle`] answers one message; [`run`] drives it from a connection.
///
/// ```
/// use lsp_server::{Message, Notification};
/// use serde_json::json;
/// let mut server = prompty_lsp::Server::new();
/// server.initialize(serde_json::from_value(json!({"capabilities": {}})).unwrap());
/// let open = Notification::new("textDocument/didOpen".into(), json!({"textDocument": {
///     "uri": "file:///tmp/ask.prompty", "languageId": "prompty", "version": 1,
///     "text": "---\ninputs: [question]\n---\nuser:\n{{ questoin }}"}}));
/// assert!(server.handle(Message::Notification(open)).is_empty()); // analyzed after a quiet moment
/// let published = server.flush();
/// let Message::Notification(n) = &published[0] else { panic!() };
/// assert_eq!(n.params["diagnostics"][0]["code"], "unused-input"); // `question`, line 2
/// assert_eq!(n.params["diagnostics"][1]["code"], "undeclared-variable");
/// assert_eq!(n.params["diagnostics"][1]["range"], json!({"start": {"line": 4, "character": 3}, "end": {"line": 4, "character": 11}}));
/// ```
#[derive(Debug)]
pub struct Server {
    documents: HashMap<String, Document>,
    encoding: Encoding,
    roots: Vec<PathBuf>,
    debounce: Duration,
    deadline: Option<Instant>,
    /// The empty diagnostics of documents closed since the last flush.
    closed: Vec<Message>,
}

impl Default for Server {
    fn default() -> Server {
        Server::new()
    }
}

impl Server {
    /// A server with no document open.
    pub fn new() -> Server {
        Server {
            documents: HashMap::new(),
            encoding: Encoding::Utf16,
            roots: Vec::new(),
            debounce: DEFAULT_DEBOUNCE,
            deadline: None,
            closed: Vec::new(),
        }
    }

    /// Reads the client's `initialize` request: the position encoding (UTF-8 when offered, else
    /// UTF-16), the workspace folders, `initializationOptions.debounceMs`. Returns the server's
    /// capabilities.
    pub fn initialize(&mut self, params: InitializeParams) -> InitializeResult {
        let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_ref());
        if offered.is_some_and(|e| e.contains(&PositionEncodingKind::UTF8)) {
            self.encoding = Encoding::Utf8;
        }
        if let Some(folders) = &params.workspace_folders {
            self.roots = folders.iter().filter_map(|f| crate::document::uri_to_path(&f.uri)).collect();
        }
        #[allow(deprecated)]
        if self.roots.is_empty() {
            self.roots.extend(params.root_uri.as_ref().and_then(crate::document::uri_to_path));
        }
        if let Some(ms) = params.initialization_options.as_ref().and_then(|o| o.get("debounceMs")?.as_u64()) {
            self.debounce = Duration::from_millis(ms.min(10_000));
        }
        InitializeResult { capabilities: self.capabilities(), server_info: Some(server_info()) }
    }

    /// What the server does.
    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities {
            position_encoding: Some(self.encoding.kind()),
            text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::SaveOptions(SaveOptions { include_text: Some(false) })),
                ..TextDocumentSyncOptions::default()
            })),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(completion::TRIGGERS.iter().map(|c| (*c).to_owned()).collect()),
                ..CompletionOptions::default()
            }),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            definition_provider: Some(OneOf::Left(true)),
            document_symbol_provider: Some(OneOf::Left(true)),
            code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                code_action_kinds: Some(vec![CodeActionKind::QUICKFIX]),
                work_done_progress_options: WorkDoneProgressOptions::default(),
                resolve_provider: None,
            })),
            semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
                SemanticTokensOptions {
                    legend: tokens::legend(),
                    full: Some(SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    work_done_progress_options: WorkDoneProgressOptions::default(),
                },
            )),
            ..ServerCapabilities::default()
        }
    }

    /// When the server wants [`Server::flush`] called (a change is waiting to be analyzed).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The open document at `uri`, analyzed (for tests and benchmarks; requests analyze first).
    pub fn document(&mut self, uri: &str) -> Option<&Document> {
        let _ = self.flush();
        self.documents.get(uri)
    }

    /// Answers one message from the client: responses to requests, and, before a request's
    /// response, the diagnostics of documents that changed since the last analysis (a request is
    /// answered from an analysis of the text as it is). Never panics on bad input: a request the
    /// server cannot read is answered with an error saying why.
    pub fn handle(&mut self, message: Message) -> Vec<Message> {
        match message {
            Message::Request(request) => {
                let mut out = self.flush();
                let id = request.id.clone();
                let method = request.method.clone();
                let response = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.request(request)))
                    .unwrap_or_else(|panic| {
                        let what = panic_text(&panic);
                        eprintln!("prompty lsp: internal error answering {method}: {what}");
                        Response::new_err(
                            id,
                            ErrorCode::InternalError as i32,
                            format!("internal error in the prompty language server answering {method} (please report it): {what}"),
                        )
                    });
                out.push(Message::Response(response));
                out
            }
            Message::Notification(n) => {
                let method = n.method.clone();
                if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.notification(n))) {
                    eprintln!("prompty lsp: internal error handling {method}: {}", panic_text(&panic));
                }
                Vec::new()
            }
            Message::Response(_) => Vec::new(),
        }
    }

    /// Analyzes every document that changed (and every open document that reads one that changed)
    /// and returns their diagnostics to publish.
    pub fn flush(&mut self) -> Vec<Message> {
        self.deadline = None;
        let dirty: Vec<String> = self.documents.iter().filter(|(_, d)| d.dirty).map(|(k, _)| k.clone()).collect();
        let mut out = std::mem::take(&mut self.closed);
        for key in dirty {
            let Some(doc) = self.documents.get(&key) else { continue };
            let open: Vec<(&Path, &str)> = self
                .documents
                .values()
                .filter(|d| d.uri != doc.uri)
                .filter_map(|d| Some((d.path.as_deref()?, d.text.as_str())))
                .collect();
            let analysis = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                analyze(&doc.text, doc.path.as_deref(), &open)
            }));
            let Some(doc) = self.documents.get_mut(&key) else { continue };
            doc.dirty = false;
            match analysis {
                Ok(mut analysis) => {
                    if analysis.report.as_ref().is_some_and(|r| r.agent.is_none()) {
                        analysis.previous_agent = doc.analysis.agent().cloned();
                    }
                    doc.analysis = analysis;
                }
                Err(panic) => {
                    eprintln!("prompty lsp: internal error analyzing {}: {}", doc.uri.as_str(), panic_text(&panic));
                    continue;
                }
            }
            let params = PublishDiagnosticsParams {
                uri: doc.uri.clone(),
                diagnostics: diagnostics::diagnostics(doc),
                version: Some(doc.version),
            };
            out.push(notification::<PublishDiagnostics>(params));
        }
        out
    }

    fn request(&mut self, request: Request) -> Response {
        let id = request.id.clone();
        match request.method.as_str() {
            Completion::METHOD => self.answer::<lsp_types::CompletionParams, _>(request, |p| {
                let at = &p.text_document_position;
                (
                    at.text_document.uri.clone(),
                    Box::new(move |doc: &Document| completion::completion(doc, doc.offset(at.position))),
                )
            }),
            HoverRequest::METHOD => self.answer::<lsp_types::HoverParams, _>(request, |p| {
                let at = &p.text_document_position_params;
                (
                    at.text_document.uri.clone(),
                    Box::new(move |doc: &Document| hover::hover(doc, doc.offset(at.position))),
                )
            }),
            GotoDefinition::METHOD => {
                let roots = self.roots.clone();
                self.answer::<lsp_types::GotoDefinitionParams, _>(request, move |p| {
                    let at = &p.text_document_position_params;
                    (
                        at.text_document.uri.clone(),
                        Box::new(move |doc: &Document| definition::definition(doc, doc.offset(at.position), &roots)),
                    )
                })
            }
            DocumentSymbolRequest::METHOD => self.answer::<lsp_types::DocumentSymbolParams, _>(request, |p| {
                (p.text_document.uri.clone(), Box::new(|doc: &Document| symbols::symbols(doc)))
            }),
            CodeActionRequest::METHOD => self.answer::<lsp_types::CodeActionParams, _>(request, |p| {
                let range = p.range;
                (
                    p.text_document.uri.clone(),
                    Box::new(move |doc: &Document| actions::code_actions(doc, doc.index.span(&doc.text, range))),
                )
            }),
            SemanticTokensFullRequest::METHOD => self.answer::<lsp_types::SemanticTokensParams, _>(request, |p| {
                (p.text_document.uri.clone(), Box::new(|doc: &Document| tokens::semantic_tokens(doc)))
            }),
            other => Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("the prompty language server does not answer `{other}`"),
            ),
        }
    }

    /// Reads a request's parameters, finds its document and answers with `answer`'s result.
    fn answer<P, R>(
        &self,
        request: Request,
        read: impl FnOnce(&P) -> (Uri, Box<dyn FnOnce(&Document) -> R + '_>),
    ) -> Response
    where
        P: DeserializeOwned,
        R: serde::Serialize,
    {
        let params: P = match serde_json::from_value(request.params) {
            Ok(p) => p,
            Err(e) => return invalid(request.id, format!("cannot read the parameters of {}: {e}", request.method)),
        };
        let (uri, answer) = read(&params);
        let Some(doc) = self.documents.get(uri.as_str()) else {
            return invalid(
                request.id,
                format!("the document {} is not open: send textDocument/didOpen first", uri.as_str()),
            );
        };
        let result = answer(doc);
        Response::new_ok(request.id, serde_json::to_value(result).unwrap_or(Value::Null))
    }

    fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidOpenTextDocumentParams>(n) else { return };
                let key = p.text_document.uri.as_str().to_owned();
                if self.documents.len() >= MAX_OPEN_DOCUMENTS && !self.documents.contains_key(&key) {
                    eprintln!("prompty lsp: {MAX_OPEN_DOCUMENTS} documents are open: {key} is not checked");
                    return;
                }
                let doc =
                    Document::new(p.text_document.uri, p.text_document.text, p.text_document.version, self.encoding);
                let path = doc.path.clone();
                self.documents.insert(key, doc);
                self.changed(path.as_deref());
            }
            DidChangeTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidChangeTextDocumentParams>(n) else { return };
                let Some(doc) = self.documents.get_mut(p.text_document.uri.as_str()) else { return };
                doc.apply(p.text_document.version, p.content_changes);
                let path = doc.path.clone();
                self.changed(path.as_deref());
            }
            DidCloseTextDocument::METHOD => {
                let Some(p) = params::<lsp_types::DidCloseTextDocumentParams>(n) else { return };
                if let Some(doc) = self.documents.remove(p.text_document.uri.as_str()) {
                    // Others that read it now read the file on disk.
                    self.changed(doc.path.as_deref());
                    let params = PublishDiagnosticsParams { uri: doc.uri, diagnostics: Vec::new(), version: None };
                    self.closed.push(notification::<PublishDiagnostics>(params));
                    self.deadline.get_or_insert_with(Instant::now);
                }
            }
            // A saved, created, changed or deleted file may be one an analysis looked for and did
            // not find (a `${file:}` target, a child, a default file): every open document is
            // checked again.
            DidSaveTextDocument::METHOD | DidChangeWatchedFiles::METHOD => {
                self.documents.values_mut().for_each(|d| d.dirty = true);
                self.changed(None);
            }
            _ => {}
        }
    }

    /// Marks the document of `path` and every open document that reads it for analysis.
    fn changed(&mut self, path: Option<&Path>) {
        for doc in self.documents.values_mut() {
            let same = matches!((path, doc.path.as_deref()), (Some(a), Some(b)) if same_file(a, b));
            if same || path.is_some_and(|p| doc.analysis.depends_on(p)) || doc.dirty {
                doc.dirty = true;
            }
        }
        if self.documents.values().any(|d| d.dirty) {
            self.deadline = Some(Instant::now() + self.debounce);
        }
    }
}

fn server_info() -> ServerInfo {
    ServerInfo { name: "prompty".to_owned(), version: Some(env!("CARGO_PKG_VERSION").to_owned()) }
}

fn params<P: DeserializeOwned>(n: Notification) -> Option<P> {
    match serde_json::from_value(n.params) {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("prompty lsp: cannot read the parameters of {}: {e}", n.method);
            None
        }
    }
}

fn notification<N: lsp_types::notification::Notification>(params: N::Params) -> Message {
    Message::Notification(Notification::new(N::METHOD.to_owned(), serde_json::to_value(params).unwrap_or(Value::Null)))
}

fn invalid(id: RequestId, message: String) -> Response {
    Response::new_err(id, ErrorCode::InvalidParams as i32, message)
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

/// Serves a client on `connection` until it sends `shutdown` and `exit` (or hangs up).
///
/// Requests before `initialize` are answered with `ServerNotInitialized`, an `initialize` whose
/// parameters cannot be read with `InvalidParams` (the client may send another), requests after
/// `shutdown` with `InvalidRequest`; notifications before `initialize` or after `shutdown` are
/// dropped.
///
/// # Errors
/// The client sent `exit` without `shutdown` first (the protocol's exit code 1), or hung up
/// before `initialize`.
pub fn run(connection: Connection) -> Result<(), ServerError> {
    let mut server = Server::new();
    let send = |m: Message| connection.sender.send(m).map_err(|_| ServerError("the client hung up".to_owned()));
    loop {
        let Ok(message) = connection.receiver.recv() else {
            return Err(ServerError("the client hung up before `initialize`".to_owned()));
        };
        match message {
            Message::Request(r) if r.method == "initialize" => {
                match serde_json::from_value::<InitializeParams>(r.params) {
                    Ok(params) => {
                        let result = server.initialize(params);
                        send(Message::Response(Response::new_ok(r.id, result)))?;
                        break;
                    }
                    Err(e) => send(Message::Response(invalid(
                        r.id,
                        format!("cannot read the parameters of initialize: {e}"),
                    )))?,
                }
            }
            Message::Request(r) => send(Message::Response(Response::new_err(
                r.id,
                ErrorCode::ServerNotInitialized as i32,
                format!("the server is not initialized: send `initialize` before `{}`", r.method),
            )))?,
            Message::Notification(n) if n.method == "exit" => {
                return Err(ServerError("the client sent `exit` before `initialize`".to_owned()))
            }
            _ => {}
        }
    }
    let mut shut_down = false;
    loop {
        let message = match server.deadline().filter(|_| !shut_down) {
            Some(deadline) => match connection.receiver.recv_deadline(deadline) {
                Ok(m) => Some(m),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return Ok(()),
            },
            None => match connection.receiver.recv() {
                Ok(m) => Some(m),
                Err(_) => return Ok(()),
            },
        };
        let Some(message) = message else {
            for out in server.flush() {
                send(out)?;
            }
            continue;
        };
        match &message {
            Message::Notification(n) if n.method == "exit" => {
                return match shut_down {
                    true => Ok(()),
                    false => Err(ServerError("the client sent `exit` without `shutdown` first".to_owned())),
                };
            }
            Message::Request(r) if shut_down => {
                let why =
                    format!("the server is shutting down (only `exit` is expected), not answering `{}`", r.method);
                send(Message::Response(Response::new_err(r.id.clone(), ErrorCode::InvalidRequest as i32, why)))?;
                continue;
            }
            Message::Request(r) if r.method == "shutdown" => {
                shut_down = true;
                send(Message::Response(Response::new_ok(r.id.clone(), ())))?;
                continue;
            }
            Message::Request(r) if r.method == "initialize" => {
                let why = "the server is already initialized".to_owned();
                send(Message::Response(Response::new_err(r.id.clone(), ErrorCode::InvalidRequest as i32, why)))?;
                continue;
            }
            Message::Notification(_) if shut_down => continue,
            _ => {}
        }
        for out in server.handle(message) {
            send(out)?;
        }
    }
}

/// Serves a client on stdin and stdout (`prompty lsp`): frames that cannot be read are answered
/// with an error and skipped (see [`crate::transport`]).
///
/// # Errors
/// As [`run`].
pub fn run_stdio() -> Result<(), ServerError> {
    let (connection, threads) = crate::transport::stdio();
    let result = run(connection);
    // Every message sent is written before the process ends (the writer ends with `connection`).
    threads.join().map_err(|e| ServerError(format!("cannot write to stdout: {e}")))?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server() -> Server {
        let mut server = Server::new();
        server.initialize(serde_json::from_value(json!({"capabilities": {}})).unwrap());
        server
    }

    fn notify(server: &mut Server, method: &str, params: Value) {
        assert!(server.handle(Message::Notification(Notification::new(method.into(), params))).is_empty());
    }

    #[test]
    fn while_a_key_is_half_typed_the_last_agent_that_loaded_serves_completion() {
        let mut s = server();
        let uri = "file:///tmp/half.prompty";
        let text = "---\ninputs: [city]\n---\nuser:\n{{ c";
        let doc = json!({"uri": uri, "languageId": "prompty", "version": 1, "text": text});
        notify(&mut s, "textDocument/didOpen", json!({"textDocument": doc}));
        assert_eq!(s.document(uri).unwrap().analysis.agent().unwrap().inputs.as_ref().unwrap()[0].name, "city");
        // `model: {` left open: the frontmatter does not load.
        let edit = json!({"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "model: {\n"});
        notify(
            &mut s,
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [edit]}),
        );
        let doc = s.document(uri).unwrap();
        assert!(doc.analysis.report.as_ref().unwrap().agent.is_none());
        assert_eq!(doc.analysis.agent().unwrap().inputs.as_ref().unwrap()[0].name, "city");
        let request = Request::new(
            RequestId::from(1),
            "textDocument/completion".into(),
            json!({"textDocument": {"uri": uri}, "position": {"line": 5, "character": 4}}),
        );
        let out = s.handle(Message::Request(request));
        let Some(Message::Response(response)) = out.last() else { panic!("{out:?}") };
        let labels: Vec<&str> = response
            .response_result
            .as_ref()
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["label"].as_str())
            .collect();
        assert_eq!(labels, ["city"]);
    }

    #[test]
    fn a_request_for_a_document_never_opened_is_an_error_that_says_so() {
        let mut s = server();
        let request = Request::new(
            RequestId::from(7),
            "textDocument/hover".into(),
            json!({"textDocument": {"uri": "file:///nowhere.prompty"}, "position": {"line": 0, "character": 0}}),
        );
        let out = s.handle(Message::Request(request));
        let Some(Message::Response(response)) = out.last() else { panic!("{out:?}") };
        let error = response.response_result.as_ref().unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParams as i32);
        assert_eq!(error.message, "the document file:///nowhere.prompty is not open: send textDocument/didOpen first");
    }

    #[test]
    fn any_place_of_any_text_is_answered_without_panic() {
        let texts = [
            "---\nmodel: {provider: é, options: {toolChoice: \"x}\ninputs:\n  - name: q\n    kind: object\n---\nuser:\n{{ q.é | }} {% for x in q. %}{{ x. }}{% endfor %}{# é #}\n{{",
            "---\n- a\n- {\n  - : :\n---\n{{ . | is not }}",
            "\u{0}\u{1}{{\u{fffd}}}\n---\n",
            "",
        ];
        for text in texts {
            let uri: lsp_types::Uri = "untitled:x".parse().unwrap();
            let mut doc = crate::document::Document::new(uri, text.to_owned(), 1, crate::position::Encoding::Utf16);
            doc.analysis = crate::analysis::analyze(&doc.text, None, &[]);
            for offset in 0..=text.len() + 1 {
                let _ = crate::completion::completion(&doc, offset);
                let _ = crate::hover::hover(&doc, offset);
            }
        }
    }
}
