//! The civil (proleptic Gregorian) date of a unix time, in UTC, for the
//! names and fields the tests write the way the real programs do (plan
//! file stamps, 9beads' `UpdatedAt`).

/// (year, month, day) of unix seconds `secs` — Howard Hinnant's
/// `civil_from_days`.
pub fn date(secs: i64) -> (i64, i64, i64) {
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[test]
fn dates_of_known_instants() {
    assert_eq!(date(0), (1970, 1, 1));
    assert_eq!(date(951_782_400), (2000, 2, 29));
    assert_eq!(date(1_798_761_599), (2026, 12, 31));
    assert_eq!(date(-1), (1969, 12, 31));
}

/// Now, in milliseconds since the Unix epoch (as `status` gives its
/// `since_unix_ms`).
pub fn unix_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.unwrap().as_millis() as u64
}
