//! UTC times as the `.tracy` files write them, without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Year, month, day, hour, minute, second and microsecond of `t` in UTC (times before 1970 are
/// taken as 1970-01-01).
fn parts(t: SystemTime) -> (i64, u32, u32, u32, u32, u32, u32) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let small = |n: i64| u32::try_from(n).unwrap_or(0);
    (year, small(month), small(day), small(rem / 3600), small(rem % 3600 / 60), small(rem % 60), d.subsec_micros())
}

/// `2026-11-25T08:10:01.123456` (UTC).
pub(crate) fn iso(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, us) = parts(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{us:06}")
}

/// `2026-11-25T08:10:01.123456Z`: RFC 3339, UTC.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let mut s = iso(t);
    s.push('Z');
    s
}

/// `20261125.081001` (UTC), for file names.
pub(crate) fn stamp(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, _) = parts(t);
    format!("{y:04}{mo:02}{d:02}.{h:02}{mi:02}{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_dates() {
        let at = |secs: u64, micros: u64| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
        assert_eq!(iso(at(0, 0)), "1970-01-01T00:00:00.000000");
        assert_eq!(iso(at(951_782_400, 7)), "2000-02-29T00:00:00.000007");
        assert_eq!(iso(at(1_795_594_201, 123_456)), "2026-11-25T08:10:01.123456");
        assert_eq!(stamp(at(1_795_594_201, 0)), "20261125.081001");
        assert_eq!(iso(at(4_107_542_399, 0)), "2100-02-28T23:59:59.000000");
        assert_eq!(iso(UNIX_EPOCH - Duration::from_secs(5)), "1970-01-01T00:00:00.000000");
    }
}
