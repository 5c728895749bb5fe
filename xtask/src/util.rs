//! Small leaf helpers every layer may use; nothing here knows the harness.

/// UTC `YYYYmmdd-HHMMSS`: run directory names and log line stamps.
pub fn timestamp() -> String {
    stamp(time::OffsetDateTime::now_utc())
}

fn stamp(t: time::OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_and_zero_padded() {
        // 1709251199 = 2024-02-29 23:59:59 UTC (a leap day, last second).
        let t = time::OffsetDateTime::from_unix_timestamp(1_709_251_199).unwrap();
        assert_eq!(stamp(t), "20240229-235959");
        let t = time::OffsetDateTime::from_unix_timestamp(0).unwrap();
        assert_eq!(stamp(t), "19700101-000000");
    }
}
