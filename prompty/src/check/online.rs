//! [`check_online`]: what only the declared servers and documents can say about a prompt — whether
//! each MCP server starts and lists its tools, whether each OpenAPI document can be read, and
//! whether the names a declaration lists (`allowedTools`, `approvalMode`'s lists) are tools the
//! server really offers.

use crate::analysis::{Diagnostic, Report};
use crate::tools::catalog::dispatch::fetch;
use crate::tools::kinds::kind_of;
use crate::tools::source::unoffered_names;
use crate::{Agent, ToolKind};

/// Checks the remote tools `agent` declares by reaching them, adding what it finds to `report`
/// (which [`crate::check`] made for the same agent, so that diagnostics name the file, line and
/// column of the declaration):
///
/// - an MCP server that cannot be started or listed, an OpenAPI document that cannot be read or
///   has no operation: an error at the declaration (`remote-tools-unavailable`), with the reason;
/// - a name in `allowedTools`, `approvalMode.alwaysRequireApprovalTools` or
///   `approvalMode.neverRequireApprovalTools` that the server does not offer: a warning at that
///   name (`unoffered-tool`), with the closest offered name;
/// - a declaration that leaves the model no tool at all: a warning (`no-remote-tools`).
///
/// Going online starts the declared MCP stdio servers (their commands run) and connects to the
/// HTTP ones and to OpenAPI documents given by URL, with the declaration's connection: load the
/// agent with its `${env:}` references resolved. The servers are loaded into
/// [`crate::catalog::ToolCatalog::global`] as the agent loop would load them, and live as long as
/// the agent loop's would (see the catalog's lifecycle). Declarations of other kinds are left
/// alone.
///
/// ```no_run
/// # async fn run() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/files.prompty").await?;
/// let mut report = prompty::check(&agent);
/// prompty::check_online_async(&agent, &mut report).await;
/// for d in report.warnings() {
///     eprintln!("{d}"); // files.prompty:9:21: MCP server 'fs' (tool `files`) does not offer 'ech0' named in allowedTools; it offers: ...
/// }
/// # Ok(()) }
/// ```
pub async fn check_online_async(agent: &Agent, report: &mut Report) {
    for (i, tool) in agent.tools.iter().flatten().enumerate() {
        let Some(source) = kind_of(tool.kind.as_str()).source(tool, agent) else { continue };
        let what = match &tool.kind {
            ToolKind::Mcp(m) => format!("MCP server '{}' (tool `{}`)", m.server_name, tool.name),
            _ => format!("tool `{}` (kind `{}`)", tool.name, tool.kind.as_str()),
        };
        let listed = match source {
            Ok(source) => fetch(tool.kind.as_str(), source).await,
            Err(e) => Err(e),
        };
        let entries = match listed {
            Ok(entries) => entries,
            Err(e) => {
                let at = report.locate(&format!("tools[{i}]"));
                report.add(
                    Diagnostic::error(at, format!("tool `{}` is unavailable: {e}", tool.name))
                        .with_code("remote-tools-unavailable"),
                );
                continue;
            }
        };
        let unoffered = unoffered_names(tool, &entries);
        for u in &unoffered {
            let at = report.locate(&format!("tools[{i}].{}[{}]", u.field, list_index(tool, u.field, &u.name)));
            report.add(Diagnostic::warning(at, u.message.clone()).with_code("unoffered-tool"));
        }
        let offered = kind_of(tool.kind.as_str()).project(tool, agent, &entries).map(|d| d.len()).unwrap_or(0);
        if offered == 0 && !entries.is_empty() {
            let at = report.locate(&format!("tools[{i}]"));
            report.add(
                Diagnostic::warning(
                    at,
                    format!(
                        "{what} offers {} tools, but this declaration lets the model use none of them",
                        entries.len()
                    ),
                )
                .with_code("no-remote-tools"),
            );
        } else if entries.is_empty() {
            let at = report.locate(&format!("tools[{i}]"));
            report.add(Diagnostic::warning(at, format!("{what} offers no tools")).with_code("no-remote-tools"));
        }
    }
}

/// [`check_online_async`] from sync code.
///
/// ```no_run
/// let agent = prompty::load("prompts/files.prompty")?;
/// let mut report = prompty::check(&agent);
/// prompty::check_online(&agent, &mut report);
/// assert!(!report.has_errors(), "a declared server is unavailable");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn check_online(agent: &Agent, report: &mut Report) {
    if let Err(e) = crate::blocking::block_on(check_online_async(agent, report)) {
        let at = report.locate("tools");
        report.add(
            Diagnostic::error(at, format!("cannot check the remote tools: {e}")).with_code("remote-tools-unavailable"),
        );
    }
}

/// The position of `name` in the list `field` of an MCP declaration (`allowedTools`,
/// `approvalMode.alwaysRequireApprovalTools`, ...), for the diagnostic's column.
fn list_index(tool: &crate::Tool, field: &str, name: &str) -> usize {
    let ToolKind::Mcp(m) = &tool.kind else { return 0 };
    let approval = m.approval_mode.as_ref();
    let list = match field {
        "allowedTools" => m.allowed_tools.as_ref(),
        "approvalMode.alwaysRequireApprovalTools" => approval.and_then(|a| a.always_require_approval_tools.as_ref()),
        _ => approval.and_then(|a| a.never_require_approval_tools.as_ref()),
    };
    list.and_then(|l| l.iter().position(|n| n == name)).unwrap_or(0)
}
