//! FNV-1a, 64 bits: a hash that is the same across builds, Rust versions
//! and machines (the standard hasher promises none of that), for what is
//! persisted or shared between processes — the event log's head and tail
//! hashes, child session ids, the name of a shared lock.

/// An FNV-1a hasher, fed in pieces.
#[derive(Debug, Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The FNV-1a hash of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv::default();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"abc"), 0xe71f_a219_0541_574b);
        let mut h = Fnv::default();
        h.write(b"a");
        h.write(b"bc");
        assert_eq!(h.finish(), fnv1a(b"abc"));
    }
}
