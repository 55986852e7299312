//! RFC 3339 timestamps and plain dates to unix seconds, by hand: the core
//! reads no clock and needs only this one conversion, not a date library.

/// Parse `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS[.frac][Z|±HH:MM|±HHMM]`
/// (`t`, `z` and a space separator accepted too), into unix seconds.
///
/// A plain date is midnight UTC; a date-time without an offset is UTC.
/// Fractional seconds round **up**, so "deferred until t" never ends early.
/// Returns `None` for anything else, including impossible dates
/// (`2025-02-30`) and out-of-range fields.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let year = num(b, 0, 4)?;
    let month = num(b, 5, 7)?;
    let day = num(b, 8, 10)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if b.len() == 10 {
        return Some(days * 86_400);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (hour, minute, second) = (num(b, 11, 13)?, num(b, 14, 16)?, num(b, 17, 19)?);
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    // 60 is a leap second; it lands on the next second, which is fine here.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut round_up = 0;
    if let Some(frac) = rest.strip_prefix(b".") {
        let digits = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        if frac[..digits].iter().any(|&c| c != b'0') {
            round_up = 1;
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), tail @ ..] => {
            let (oh, om) = match tail {
                [_, _, b':', _, _] => (num(tail, 0, 2)?, num(tail, 3, 5)?),
                [_, _, _, _] => (num(tail, 0, 2)?, num(tail, 2, 4)?),
                _ => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = oh * 3600 + om * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset + round_up)
}

/// The ASCII decimal number in `b[from..to]`, if all digits.
fn num(b: &[u8], from: usize, to: usize) -> Option<i64> {
    let digits = b.get(from..to)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0, |n, &d| n * 10 + i64::from(d - b'0')))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`): years counted from March so the leap day comes last.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values_match_gnu_date() {
        // Expected values from `date -u -d <value> +%s`.
        for (s, want) in [
            ("2025-01-15T10:00:00Z", 1_736_935_200),
            ("2025-01-15T12:00:00+02:00", 1_736_935_200),
            ("2025-01-15T12:00:00+0200", 1_736_935_200),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59Z", -1),
            ("2000-02-29T23:59:59Z", 951_868_799),
            ("2024-12-31", 1_735_603_200),
            ("2099-03-01T00:00:00-05:30", 4_076_026_200),
            ("2025-01-15 10:00:00z", 1_736_935_200),
            ("2025-01-15T10:00:00", 1_736_935_200),
        ] {
            assert_eq!(parse_timestamp(s), Some(want), "{s}");
        }
    }

    #[test]
    fn fractions_round_up() {
        assert_eq!(
            parse_timestamp("2025-01-15T10:00:00.000Z"),
            Some(1_736_935_200)
        );
        assert_eq!(
            parse_timestamp("2025-01-15T10:00:00.123456789+00:00"),
            Some(1_736_935_201)
        );
    }

    #[test]
    fn rejects_garbage_and_impossible_dates() {
        for s in [
            "",
            "tomorrow",
            "2025-1-15",
            "2025-02-30",
            "2023-02-29",
            "2025-13-01",
            "2025-01-15T24:00:00Z",
            "2025-01-15T10:00Z",
            "2025-01-15T10:00:00.Z",
            "2025-01-15T10:00:00+2:00",
            "2025-01-15T10:00:00 UTC",
            "2025-01-15X10:00:00Z",
            "2025-01-15T10:00:00Zjunk",
        ] {
            assert_eq!(parse_timestamp(s), None, "{s}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = parse_timestamp(&s);
        }

        #[test]
        fn consecutive_days_are_86400_apart(y in 1i64..9999, m in 1i64..=12, d in 1i64..28) {
            let a = parse_timestamp(&format!("{y:04}-{m:02}-{d:02}"));
            let b = parse_timestamp(&format!("{y:04}-{m:02}-{:02}T00:00:00Z", d + 1));
            prop_assert_eq!(b.zip(a).map(|(b, a)| b - a), Some(86_400));
        }
    }
}
