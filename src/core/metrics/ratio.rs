//! Counts and fractions as the report prints them: a length as a count, and
//! `part ÷ whole` rounded half up to two decimals in integer arithmetic.

pub(super) fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `part ÷ whole × 100`, rounded half up to two decimals in integer arithmetic so
/// that 29/32 reads 90.63 and not a float artefact.
pub fn percent(part: u32, whole: u32) -> Option<f64> {
    scaled(part, whole, 100)
}

/// `part ÷ whole × scale`, rounded half up to two decimals.
pub(super) fn scaled(part: u32, whole: u32, scale: u64) -> Option<f64> {
    if whole == 0 {
        return None;
    }
    let whole = u64::from(whole);
    let hundredths = (u64::from(part) * scale * 200 + whole) / (2 * whole);
    Some(hundredths as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_half_up_to_two_decimals() {
        assert_eq!(percent(29, 32), Some(90.63));
        assert_eq!(percent(2, 3), Some(66.67));
        assert_eq!(percent(1, 8), Some(12.5));
        assert_eq!(percent(0, 5), Some(0.0));
        assert_eq!(percent(3, 0), None);
        assert_eq!(scaled(47, 32, 1), Some(1.47));
    }
}
