//! Feature hashing (docs/ARCHITECTURE.md §2.8): FNV-1a 64 over the exact UTF-8 bytes, then MurmurHash3's fmix64.

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// An FNV-1a 64 state that can be fed in pieces: hashing `"a b"` equals feeding `"a"`, `" "`, `"b"`,
/// which lets shingles be hashed without building the joined string.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(FNV_OFFSET_BASIS)
    }
}

impl Fnv1a64 {
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        // Byte by byte, as FNV-1a is defined; four bytes per turn of the loop to save its overhead
        // on the short tokens this hashes (a CJK pair is 6 bytes).
        let mut quads = bytes.chunks_exact(4);
        for q in &mut quads {
            for &b in q {
                h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
            }
        }
        for &b in quads.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        }
        self.0 = h;
    }

    /// One byte: `write(&[b])`.
    #[inline]
    pub fn write_u8(&mut self, b: u8) {
        self.0 = (self.0 ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }

    #[inline]
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a 64 of exactly these bytes (no length prefix, no terminator, unlike `Hash for str`).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a64::default();
    h.write(bytes);
    h.finish()
}

/// MurmurHash3's 64-bit finalizer: raw FNV-1a leaves several output bits constant on short tokens.
#[inline]
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// `h(f)` of docs/ARCHITECTURE.md §2: the 64-bit hash of one feature.
pub fn feature_hash(feature: &str) -> u64 {
    fmix64(fnv1a64(feature.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_golden_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn feature_hash_golden_vectors() {
        assert_eq!(feature_hash("a"), 0x82a2a958a9bece5b);
        assert_eq!(feature_hash("喜欢"), 0xab26823519bb2f6e);
        assert_eq!(feature_hash("simhash"), 0x91bed202841f2537);
    }

    #[test]
    fn streaming_equals_one_shot() {
        let mut h = Fnv1a64::default();
        h.write("新闻".as_bytes());
        h.write(b" ");
        h.write(b"feed");
        assert_eq!(h.finish(), fnv1a64("新闻 feed".as_bytes()));
    }
}
