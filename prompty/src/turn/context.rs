//! Trimming a conversation to a [`ContextBudget`] (spec §13.3): whole exchanges dropped oldest
//! first, replaced by one summary message; system messages and the current exchange kept.

use super::options::ContextBudget;
use crate::{ContentPart, Message, Role};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How a summary message starts.
pub(crate) const SUMMARY_PREFIX: &str = "[Summary of earlier conversation] ";

/// The longest piece of one dropped user message in the default summary, in characters.
const SUMMARY_PIECE: usize = 200;
/// The longest default summary, in characters.
const SUMMARY_MAX: usize = 2_000;

/// The size of a message, in characters: its text parts, the sources of its other parts, and its
/// metadata as JSON.
fn size(m: &Message) -> usize {
    let parts: usize = m
        .content
        .iter()
        .map(|p| match p {
            ContentPart::Text { value } => value.chars().count(),
            ContentPart::Image { source, .. }
            | ContentPart::File { source, .. }
            | ContentPart::Audio { source, .. } => source.chars().count(),
        })
        .sum();
    let metadata =
        if m.has_metadata() { serde_json::to_string(&m.metadata_json()).map_or(0, |s| s.chars().count()) } else { 0 };
    parts + metadata
}

fn is_instruction(m: &Message) -> bool {
    matches!(m.role, Role::System | Role::Developer)
}

fn is_summary(m: &Message) -> bool {
    m.role == Role::System
        && m.content.first().and_then(ContentPart::as_text).is_some_and(|t| t.starts_with(SUMMARY_PREFIX))
}

/// Trims `messages` to the budget. Returns how many messages were dropped (0: nothing changed).
pub(crate) fn trim(messages: &mut Vec<Message>, budget: &ContextBudget) -> usize {
    let sizes: Vec<usize> = messages.iter().map(size).collect();
    let total: usize = sizes.iter().sum();
    if total <= budget.chars {
        return 0;
    }
    // Everything from the last user message on is the current exchange: never dropped.
    let Some(current) = messages.iter().rposition(|m| m.role == Role::User) else { return 0 };
    // The droppable exchanges before it, oldest first: (start, end) ranges of message indices,
    // skipping instructions (which stay where they are).
    let mut exchanges: Vec<Vec<usize>> = Vec::new();
    for (i, m) in messages[..current].iter().enumerate() {
        if is_instruction(m) {
            continue;
        }
        if m.role == Role::User || exchanges.is_empty() {
            exchanges.push(vec![i]);
        } else if let Some(last) = exchanges.last_mut() {
            last.push(i);
        }
    }
    if exchanges.is_empty() {
        return 0;
    }
    let earlier: Option<usize> = messages.iter().position(is_summary);
    let mut kept = total;
    let mut dropped: Vec<usize> = Vec::new();
    for exchange in exchanges {
        if kept + estimated_summary(messages, &dropped, budget) <= budget.chars && !dropped.is_empty() {
            break;
        }
        kept -= exchange.iter().map(|&i| sizes[i]).sum::<usize>();
        dropped.extend(exchange);
    }
    let dropped_messages: Vec<Message> = dropped.iter().map(|&i| messages[i].clone()).collect();
    let mut summary = summarize(&dropped_messages, budget);
    if let Some(i) = earlier {
        // Fold an earlier summary of this conversation into the new one.
        let before = messages[i].text();
        let before = before.strip_prefix(SUMMARY_PREFIX).unwrap_or(&before);
        summary = format!("{before} {summary}");
        dropped.push(i);
    }
    let at = dropped.iter().copied().min().unwrap_or(0);
    let count = dropped.len();
    let mut index = 0;
    messages.retain(|_| {
        let keep = !dropped.contains(&index);
        index += 1;
        keep
    });
    let at = at.min(messages.len());
    messages.insert(at, Message::new(Role::System, format!("{SUMMARY_PREFIX}{summary}")));
    count - usize::from(earlier.is_some())
}

/// The size the summary of `dropped` will have (the default summary's; a custom summarizer only
/// runs once, at the end).
fn estimated_summary(messages: &[Message], dropped: &[usize], budget: &ContextBudget) -> usize {
    if dropped.is_empty() {
        return 0;
    }
    if budget.summarizer.is_some() {
        return SUMMARY_PREFIX.len();
    }
    let dropped: Vec<Message> = dropped.iter().map(|&i| messages[i].clone()).collect();
    SUMMARY_PREFIX.len() + default_summary(&dropped).chars().count()
}

fn summarize(dropped: &[Message], budget: &ContextBudget) -> String {
    if let Some(summarizer) = &budget.summarizer {
        match catch_unwind(AssertUnwindSafe(|| summarizer(dropped))) {
            Ok(text) => return text,
            Err(payload) => tracing::warn!(
                target: "prompty::turn",
                "the context summarizer panicked ({}); using the default summary",
                crate::support::panic_text(payload.as_ref())
            ),
        }
    }
    default_summary(dropped)
}

/// `User asked: <start of each dropped user message>; ...`, at most [`SUMMARY_MAX`] characters.
fn default_summary(dropped: &[Message]) -> String {
    let asked: Vec<String> = dropped
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| {
            let text = m.text();
            let text = text.trim();
            let mut piece: String = text.chars().take(SUMMARY_PIECE).collect();
            if piece.len() < text.len() {
                piece.push('…');
            }
            piece
        })
        .collect();
    let text = if asked.is_empty() {
        format!("{} earlier messages were left out.", dropped.len())
    } else {
        format!("User asked: {}", asked.join(" | "))
    };
    if text.chars().count() <= SUMMARY_MAX {
        return text;
    }
    let mut cut: String = text.chars().take(SUMMARY_MAX - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: Role, text: &str) -> Message {
        Message::new(role, text)
    }

    fn roles(messages: &[Message]) -> Vec<&'static str> {
        messages.iter().map(|m| m.role.as_str()).collect()
    }

    #[test]
    fn fits_means_untouched() {
        let mut msgs = vec![m(Role::System, "s"), m(Role::User, "hi")];
        assert_eq!(trim(&mut msgs, &ContextBudget::chars(100)), 0);
        assert_eq!(msgs.len(), 2);
    }

    #[test]
    fn drops_oldest_exchanges_and_keeps_instructions_and_the_current_exchange() {
        let long = "x".repeat(100);
        let mut msgs = vec![
            m(Role::System, "sys"),
            m(Role::User, "first question"),
            m(Role::Assistant, &long),
            m(Role::User, "second question"),
            m(Role::Assistant, &long),
            m(Role::User, "now"),
            m(Role::Assistant, "calling"),
            m(Role::Tool, &long),
        ];
        let dropped = trim(&mut msgs, &ContextBudget::chars(250));
        assert_eq!(dropped, 4);
        assert_eq!(roles(&msgs), ["system", "system", "user", "assistant", "tool"]);
        assert!(msgs[1].text().starts_with(SUMMARY_PREFIX));
        assert!(msgs[1].text().contains("User asked: first question | second question"));
    }

    #[test]
    fn stops_dropping_once_it_fits() {
        let long = "y".repeat(100);
        let mut msgs = vec![
            m(Role::System, "sys"),
            m(Role::User, "old"),
            m(Role::Assistant, &long),
            m(Role::User, "recent"),
            m(Role::Assistant, "short"),
            m(Role::User, "now"),
        ];
        assert_eq!(trim(&mut msgs, &ContextBudget::chars(90)), 2);
        assert_eq!(roles(&msgs), ["system", "system", "user", "assistant", "user"]);
    }

    #[test]
    fn a_second_trim_folds_the_first_summary_in() {
        let long = "z".repeat(100);
        let mut msgs = vec![m(Role::User, "one"), m(Role::Assistant, &long), m(Role::User, "two")];
        trim(&mut msgs, &ContextBudget::chars(60));
        msgs.extend([m(Role::Assistant, &long), m(Role::User, "three")]);
        trim(&mut msgs, &ContextBudget::chars(120));
        let summaries: Vec<String> = msgs.iter().filter(|m| is_summary(m)).map(Message::text).collect();
        assert_eq!(summaries.len(), 1, "{msgs:?}");
        assert!(summaries[0].contains("one") && summaries[0].contains("two"), "{summaries:?}");
    }

    #[test]
    fn a_custom_summarizer_is_used_and_a_panicking_one_falls_back() {
        let long = "w".repeat(100);
        let base = vec![m(Role::User, "q1"), m(Role::Assistant, &long), m(Role::User, "q2")];
        let mut msgs = base.clone();
        trim(&mut msgs, &ContextBudget::chars(50).summarizer(|d| format!("{} gone", d.len())));
        assert_eq!(msgs[0].text(), format!("{SUMMARY_PREFIX}2 gone"));
        let mut msgs = base;
        trim(&mut msgs, &ContextBudget::chars(50).summarizer(|_| panic!("boom")));
        assert!(msgs[0].text().contains("User asked: q1"));
    }

    #[test]
    fn the_default_summary_is_bounded() {
        let huge: Vec<Message> = (0..100).map(|i| m(Role::User, &format!("{i} {}", "q".repeat(500)))).collect();
        assert!(default_summary(&huge).chars().count() <= SUMMARY_MAX);
    }
}
