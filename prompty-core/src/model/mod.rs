//! The typed model of a `.prompty` file (the Prompty specification's data model).

mod agent;
mod connection;
mod llm;
mod message;
mod property;
mod secret;
mod structured;
mod template;
mod tool;

pub use agent::{Agent, AgentSource, EmbeddedPrompt};
pub(crate) use connection::remember_secret_fields;
pub use connection::{is_openai_host, redact_url, Connection, ConnectionCommon, MaxTokensField};
pub use llm::{Model, ModelOptions, ToolChoice};
pub use message::{ContentPart, Message, Role, ToolCall};
pub use property::{Property, PropertyKind};
pub use secret::{Remembered, Secret};
pub use structured::{StructuredOutput, UnknownStructuredOutput};
pub use template::{FormatConfig, ParserConfig, Template};
pub use tool::{ApprovalMode, Binding, CustomTool, FunctionTool, McpTool, OpenApiTool, PromptyTool, Tool, ToolKind};
