//! Kubernetes resource quantities compared by value: `1000m` = `1`, `1Gi` = `1024Mi`, `0.5` = `500m`.
//!
//! The API server stores built-in quantities in a canonical form that often differs from what the
//! manifest says, so quantities are parsed to an exact decimal (`mantissa × 10^exponent`, with the
//! same rounding up to nano precision the server applies) and compared as numbers.

/// An exact decimal value of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    mantissa: i128,
    exponent: i32,
}

impl Quantity {
    /// Parse a quantity string (`128Mi`, `0.5`, `1e3`, `500m`). `None` if it is not one.
    pub fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim();
        if s.is_empty() {
            return None;
        }
        let (sign, rest) = match s.as_bytes()[0] {
            b'-' => (-1i128, &s[1..]),
            b'+' => (1, &s[1..]),
            _ => (1, s),
        };
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (num, suffix) = rest.split_at(num_end);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        if digits.len() > 30 {
            return None;
        }
        let mut mantissa: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
        let mut exponent: i32 = -(frac_part.len() as i32);
        let (mul, exp10): (i128, i32) = match suffix {
            "" => (1, 0),
            "n" => (1, -9),
            "u" => (1, -6),
            "m" => (1, -3),
            "k" => (1, 3),
            "M" => (1, 6),
            "G" => (1, 9),
            "T" => (1, 12),
            "P" => (1, 15),
            "E" => (1, 18),
            "Ki" => (1 << 10, 0),
            "Mi" => (1 << 20, 0),
            "Gi" => (1 << 30, 0),
            "Ti" => (1 << 40, 0),
            "Pi" => (1 << 50, 0),
            "Ei" => (1 << 60, 0),
            s if s.starts_with(['e', 'E']) => (1, s[1..].parse::<i32>().ok().filter(|e| e.abs() <= 60)?),
            _ => return None,
        };
        mantissa = mantissa.checked_mul(mul)?.checked_mul(sign)?;
        exponent += exp10;
        Some(Quantity { mantissa, exponent }.round_to_nano().normalized())
    }

    /// The API server keeps at most nano precision, rounding away from zero.
    fn round_to_nano(mut self) -> Quantity {
        while self.exponent < -9 {
            let q = self.mantissa / 10;
            let r = self.mantissa % 10;
            self.mantissa = if r > 0 {
                q + 1
            } else if r < 0 {
                q - 1
            } else {
                q
            };
            self.exponent += 1;
        }
        self
    }

    fn normalized(mut self) -> Quantity {
        if self.mantissa == 0 {
            return Quantity { mantissa: 0, exponent: 0 };
        }
        while self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.exponent += 1;
        }
        self
    }
}

/// Whether two quantity strings are the same amount. `None` if either is not a quantity.
pub fn same_quantity(a: &str, b: &str) -> Option<bool> {
    Some(Quantity::parse(a)? == Quantity::parse(b)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_forms() {
        for (a, b) in [
            ("1000m", "1"),
            ("5000m", "5"),
            ("0.5", "500m"),
            ("1.08", "1080m"),
            ("1000M", "1G"),
            ("1000", "1k"),
            ("1024Mi", "1Gi"),
            ("307200Ki", "300Mi"),
            ("1.5Gi", "1536Mi"),
            (".001Ki", "1024m"),
            ("0", "0m"),
            ("1e3", "1k"),
            ("0.25Gi", "256Mi"),
            ("128974848", "123Mi"),
            ("0.0000000001", "1n"),
        ] {
            assert_eq!(same_quantity(a, b), Some(true), "{a} = {b}");
        }
    }

    #[test]
    fn different_amounts() {
        for (a, b) in [("1", "2"), ("1Gi", "1G"), ("500m", "0.6"), ("1Mi", "1M"), ("-1", "1")] {
            assert_eq!(same_quantity(a, b), Some(false), "{a} != {b}");
        }
    }

    #[test]
    fn not_quantities() {
        assert_eq!(same_quantity("abc", "1"), None);
        assert_eq!(same_quantity("1Zi", "1"), None);
        assert_eq!(same_quantity("", "1"), None);
        assert_eq!(same_quantity("1.2.3", "1"), None);
    }
}
