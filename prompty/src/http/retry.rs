//! The one retry policy of prompty: [`RetryPolicy`] (attempts, one exponential backoff with
//! jitter), the one `Retry-After` reader, the one retry loop every HTTP caller goes through (the
//! provider executors, OpenAPI tools, the fetch of OpenAPI documents), and the request budget the
//! agent loop shares with that retry loop, so that the retries of the two never multiply.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest `Retry-After` / `retry-after-ms` taken as it is; any larger (or unparsable huge)
/// value counts as this, which is more than any sensible [`RetryPolicy::max_delay`].
///
/// ```
/// assert_eq!(prompty::http::MAX_RETRY_AFTER.as_secs(), 24 * 60 * 60);
/// ```
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// How failed requests are retried.
///
/// A request is retried when the server answers 429 (too many requests) or a 5xx status, or when
/// the connection fails (refused, reset, timed out) before a response status was read. Any other
/// 4xx is never retried, nor is a request whose URL cannot be built (a configuration error: one
/// attempt, no wait). Between attempts the client waits for the server's `Retry-After` (or
/// `retry-after-ms`) when it sends one, otherwise for an exponential backoff with jitter:
/// attempt `n` (1-based) waits between half and all of `base_delay * 2^(n-1)`, never more than
/// `max_delay`. When the server asks for a longer wait than `max_delay`, the error is returned at
/// once instead of retrying early. A `Retry-After` that is negative, not a number, not a date, or
/// absurd (`1e30`, a date centuries ahead) never panics: garbage is ignored (the backoff applies)
/// and a huge value counts as [`MAX_RETRY_AFTER`].
///
/// Once a successful (2xx) status has arrived, nothing is re-sent: a body cut short after that
/// point fails the call, because the provider may already have run (and billed) the generation.
/// The same holds for a stream: it is retried only until its response starts; once events flow, a
/// broken stream is reported to the caller (its outcome may be indeterminate).
///
/// **How many requests one model call sends at most.** A call outside the agent loop (`invoke`,
/// `run`, ...) sends at most `max_attempts` requests (default 3). Inside the agent loop (`turn`),
/// the loop and this policy share one budget: a model call sends at most `1 + llm_retries`
/// requests in all (default 4, see [`crate::TurnOptions::llm_retries`]), each HTTP call of it at
/// most `max_attempts`; the loop retries only while that budget lasts, never once per HTTP
/// attempt. (Before this budget, one persistent 429 cost 3 × 4 = 12 requests.)
///
/// ```
/// use prompty::http::RetryPolicy;
/// use std::time::Duration;
/// let p = RetryPolicy::default();
/// assert_eq!(p.max_attempts, 3);
/// assert!(p.backoff(1) <= p.base_delay);
/// assert!(p.backoff(30) <= p.max_delay);
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// let huge = RetryPolicy { max_delay: Duration::MAX, base_delay: Duration::MAX, max_attempts: 9 };
/// assert!(huge.backoff(u32::MAX) >= Duration::MAX / 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times a request is sent at most, the first attempt included (`1`: no retries).
    pub max_attempts: u32,
    /// The backoff before the first retry (before jitter).
    pub base_delay: Duration,
    /// The longest wait between two attempts, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Three attempts, 500 ms base delay, waits of at most 60 s.
    fn default() -> Self {
        RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(60) }
    }
}

impl RetryPolicy {
    /// One attempt, no retries.
    ///
    /// ```
    /// assert_eq!(prompty::http::RetryPolicy::none().max_attempts, 1);
    /// ```
    pub fn none() -> Self {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }

    /// The backoff before retry number `retry` (1-based), with jitter: between half and all of
    /// `base_delay * 2^(retry-1)`, capped at `max_delay`.
    ///
    /// ```
    /// let p = prompty::http::RetryPolicy::default();
    /// assert!(p.backoff(2) >= p.base_delay && p.backoff(2) <= p.base_delay * 2);
    /// ```
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = exponential(self.base_delay, retry).min(self.max_delay);
        jittered(exp / 2, exp / 2, self.max_delay)
    }

    /// How long to wait before retry number `retry`, given the server's `Retry-After`; `None` when
    /// the server asks for more than `max_delay` (then the request is not retried).
    pub(crate) fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(d) if d > self.max_delay => None,
            Some(d) => Some(d),
            None => Some(self.backoff(retry)),
        }
    }
}

/// `base · 2^(retry-1)` (1-based `retry`), saturating; the exponent stops growing at 2^20.
pub(crate) fn exponential(base: Duration, retry: u32) -> Duration {
    base.saturating_mul(1u32 << retry.saturating_sub(1).min(20))
}

/// The one jittered wait of prompty: `low` plus a uniformly random part of `spread`, at most
/// `max`. Both backoffs (this policy's and the agent loop's) are this function.
pub(crate) fn jittered(low: Duration, spread: Duration, max: Duration) -> Duration {
    use rand::RngExt as _;
    let nanos = u64::try_from(spread.as_nanos()).unwrap_or(u64::MAX);
    let jitter = if nanos == 0 { 0 } else { rand::rng().random_range(0..=nanos) };
    low.saturating_add(Duration::from_nanos(jitter)).min(max)
}

/// `Retry-After` as the server sent it, from `retry-after-ms` (milliseconds, preferred when it
/// parses) and `Retry-After` (delta-seconds, fractional accepted, or an HTTP date), at most
/// [`MAX_RETRY_AFTER`]. A negative, NaN or unparsable value is ignored (`None`); a huge one
/// (`1e30`, `inf`, a date centuries ahead) counts as [`MAX_RETRY_AFTER`]; a date in the past is
/// zero. Never panics.
pub(crate) fn retry_after_values(retry_after_ms: Option<&str>, retry_after: Option<&str>) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.map(str::trim).and_then(|v| v.parse::<f64>().ok()) {
        if let Some(d) = bounded_seconds(ms / 1000.0) {
            return Some(d);
        }
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return bounded_seconds(secs);
    }
    http_date_from_now(value)
}

#[cfg(feature = "http")]
fn http_date_from_now(value: &str) -> Option<Duration> {
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or_default().min(MAX_RETRY_AFTER))
}

#[cfg(not(feature = "http"))]
fn http_date_from_now(_value: &str) -> Option<Duration> {
    None
}

/// `secs` as a duration of at most [`MAX_RETRY_AFTER`]; `None` for NaN or a negative value.
fn bounded_seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    let max = MAX_RETRY_AFTER.as_secs_f64();
    Some(Duration::try_from_secs_f64(secs.min(max)).unwrap_or(MAX_RETRY_AFTER))
}

/// The server's wait from a response's headers (see [`retry_after_values`]).
#[cfg(feature = "http")]
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    retry_after_values(text("retry-after-ms"), text("retry-after"))
}

/// What one attempt of a request came to, for [`with_retries`].
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Attempt<T, E> {
    /// It succeeded.
    Done(T),
    /// It failed in a way another attempt may cure, with the server's `Retry-After`.
    Retry(E, Option<Duration>),
    /// It failed for good (not retried).
    Fail(E),
}

/// The one retry loop: runs `attempt` until it is done, fails for good, the policy's attempts are
/// spent, the server asks for a wait longer than `max_delay`, or the request budget of the model
/// call in progress (see [`RequestBudget`]) is spent. The error comes with the number of attempts
/// made.
#[cfg(feature = "http")]
pub(crate) async fn with_retries<T, E, Fut>(
    policy: &RetryPolicy,
    mut attempt: impl FnMut() -> Fut,
) -> std::result::Result<T, (E, u32)>
where
    Fut: Future<Output = Attempt<T, E>>,
{
    let max_attempts = policy.max_attempts.max(1);
    let mut sent: u32 = 0;
    loop {
        sent = sent.saturating_add(1);
        RequestBudget::spend_one();
        let (error, retry_after) = match attempt().await {
            Attempt::Done(value) => return Ok(value),
            Attempt::Fail(error) => return Err((error, sent)),
            Attempt::Retry(error, retry_after) => (error, retry_after),
        };
        if sent >= max_attempts || !RequestBudget::left() {
            return Err((error, sent));
        }
        match policy.delay(sent, retry_after) {
            Some(d) => tokio::time::sleep(d).await,
            None => {
                // The server asked for a longer wait than the policy allows: the agent loop does
                // not retry early either.
                RequestBudget::spend_all();
                return Err((error, sent));
            }
        }
    }
}

tokio::task_local! {
    static BUDGET: RequestBudget;
}

/// The requests one model call may still send, shared by the agent loop and the retry loop of the
/// HTTP layer: the loop creates one per model call (`1 + llm_retries` requests) and runs each
/// attempt of the call inside [`RequestBudget::scope`]; every request the HTTP layer sends in that
/// scope spends one, and neither loop retries once it is spent. Outside a scope, nothing is
/// counted.
#[derive(Debug, Clone)]
pub(crate) struct RequestBudget(Arc<AtomicU32>);

impl RequestBudget {
    /// A budget of `requests` requests.
    pub(crate) fn new(requests: u32) -> Self {
        RequestBudget(Arc::new(AtomicU32::new(requests)))
    }

    /// How many requests are left.
    pub(crate) fn remaining(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }

    /// Runs `future` with this budget in scope.
    pub(crate) async fn scope<F: Future>(&self, future: F) -> F::Output {
        BUDGET.scope(self.clone(), future).await
    }

    /// Spends one request of the budget in scope (none left: nothing happens; the first attempt
    /// of a call is always sent).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn spend_one() {
        let _ = BUDGET.try_with(|b| b.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)));
    }

    /// Spends what is left of the budget in scope.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn spend_all() {
        let _ = BUDGET.try_with(|b| b.0.store(0, Ordering::SeqCst));
    }

    /// Whether another request may be sent: a budget in scope has some left, or none is in scope.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn left() -> bool {
        BUDGET.try_with(|b| b.remaining() > 0).unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p =
            RetryPolicy { max_attempts: 5, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(1) };
        for _ in 0..50 {
            let d1 = p.backoff(1);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100), "{d1:?}");
            let d3 = p.backoff(3);
            assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400), "{d3:?}");
            assert!(p.backoff(40) <= Duration::from_secs(1));
        }
        assert_eq!(p.delay(1, Some(Duration::from_secs(2))), None);
        assert_eq!(p.delay(1, Some(Duration::from_millis(300))), Some(Duration::from_millis(300)));
    }

    #[test]
    fn jitter_stays_in_its_range() {
        for _ in 0..100 {
            let d = jittered(Duration::from_millis(10), Duration::from_millis(5), Duration::from_secs(1));
            assert!(d >= Duration::from_millis(10) && d <= Duration::from_millis(15), "{d:?}");
        }
        assert_eq!(jittered(Duration::MAX, Duration::MAX, Duration::from_secs(60)), Duration::from_secs(60));
        assert_eq!(jittered(Duration::ZERO, Duration::ZERO, Duration::MAX), Duration::ZERO);
    }

    #[test]
    fn retry_after_delta_seconds_and_milliseconds() {
        assert_eq!(retry_after_values(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after_values(None, Some(" 7 ")), Some(Duration::from_secs(7)));
        assert_eq!(retry_after_values(None, Some("0.5")), Some(Duration::from_millis(500)));
        assert_eq!(retry_after_values(Some("150"), Some("2")), Some(Duration::from_millis(150)));
        assert_eq!(retry_after_values(Some("soon"), Some("2")), Some(Duration::from_secs(2)), "bad ms: seconds");
        assert_eq!(retry_after_values(None, None), None);
    }

    #[cfg(feature = "http")]
    #[test]
    fn retry_after_http_dates() {
        use std::time::SystemTime;
        let later = SystemTime::now() + Duration::from_secs(30);
        let d = retry_after_values(None, Some(&httpdate::fmt_http_date(later))).unwrap();
        assert!(d > Duration::from_secs(27) && d <= Duration::from_secs(30), "{d:?}");
        assert_eq!(retry_after_values(None, Some("Wed, 21 Oct 2015 07:28:00 GMT")), Some(Duration::ZERO));
        assert_eq!(retry_after_values(None, Some("Fri, 31 Dec 9999 23:59:59 GMT")), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after_values(None, Some("Wed, 32 Oct 2015 07:28:00 GMT")), None);
    }

    #[test]
    fn retry_after_garbage_never_panics() {
        for v in ["1e30", "inf", "Infinity", "1.8e308", "99999999999999999999999"] {
            assert_eq!(retry_after_values(Some(v), None), Some(MAX_RETRY_AFTER), "{v}");
            assert_eq!(retry_after_values(None, Some(v)), Some(MAX_RETRY_AFTER), "{v}");
        }
        for v in ["-1", "-inf", "NaN", "nan", "soon", "", "1,5", "0x10", "\u{0}", "é"] {
            assert_eq!(retry_after_values(Some(v), None), None, "{v}");
            assert_eq!(retry_after_values(None, Some(v)), None, "{v}");
        }
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, retry_after_values(Some("1e30"), None)), None, "a huge wait is not honoured: no retry");
    }

    #[cfg(feature = "http")]
    #[test]
    fn retry_after_from_headers() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        h.insert("retry-after", HeaderValue::from_bytes(b"\xff").unwrap());
        h.remove("retry-after-ms");
        assert_eq!(retry_after(&h), None, "not text: ignored");
    }

    #[cfg(feature = "http")]
    #[tokio::test]
    async fn the_loop_stops_when_the_budget_is_spent() {
        let policy = RetryPolicy { max_attempts: 9, base_delay: Duration::ZERO, max_delay: Duration::from_secs(1) };
        let budget = RequestBudget::new(2);
        let mut tries = 0;
        let out: std::result::Result<(), (&str, u32)> = budget
            .scope(with_retries(&policy, || {
                tries += 1;
                async { Attempt::Retry("busy", None) }
            }))
            .await;
        assert_eq!(out, Err(("busy", 2)));
        assert_eq!((tries, budget.remaining()), (2, 0));
        let mut tries = 0;
        let out: std::result::Result<(), (&str, u32)> = with_retries(&policy, || {
            tries += 1;
            async { Attempt::Retry("busy", Some(Duration::ZERO)) }
        })
        .await;
        assert_eq!(out, Err(("busy", 9)), "no budget in scope: the policy alone");
        let budget = RequestBudget::new(4);
        let out: std::result::Result<(), (&str, u32)> = budget
            .scope(with_retries(&policy, || async { Attempt::Retry("later", Some(Duration::from_secs(5))) }))
            .await;
        assert_eq!(out, Err(("later", 1)), "a wait longer than max_delay: no retry");
        assert_eq!(budget.remaining(), 0, "nor by the agent loop");
        let out: std::result::Result<(), (&str, u32)> = with_retries(&policy, || async { Attempt::Fail("bad") }).await;
        assert_eq!(out, Err(("bad", 1)));
    }
}
