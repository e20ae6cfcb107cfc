//! `format_message` against `std`'s `format!` for the same values: every
//! spec of the table, for many pseudo-random values of each type (their
//! bits drawn uniformly, so NaNs, infinities, subnormals and extreme
//! integers come up, plus fixed edge values), recorded as the device
//! records them (`PanicValue`).

use super::*;
use std::vec::Vec;

/// xorshift64*: reproducible values without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Random bits, often shortened so that small values come up too.
    fn bits(&mut self) -> u64 {
        let (v, s) = (self.next(), self.next());
        if s % 3 == 0 {
            v >> (s >> 58)
        } else {
            v
        }
    }
}

const ROUNDS: usize = 300;

/// For `ROUNDS` values of `$gen` (and `$edges`), each format string of the
/// list with the value as argument 0 (and a `u8` 7 recorded as argument 1), recorded
/// and formatted by `format_message`, equals `format!`'s text.
macro_rules! check {
    ($rng:ident, $gen:expr, [$($edge:expr),*], [$($f:literal),* $(,)?]) => {{
        let mut vals: Vec<_> = (0..ROUNDS).map(|_| $gen).collect();
        vals.extend([$($edge),*]);
        for v in vals {
            let (t0, b0) = v.panic_value();
            let (t1, b1) = 7u8.panic_value();
            let values = [b0, b1, 0, 0, 0, 0, 0, 0];
            $(
                let got = format_message($f, t0 | t1 << TAG_BITS, &values, &[]);
                assert_eq!(got, format!($f, v), "format string {:?}, value {:?}", $f, v);
            )*
        }
    }};
}

macro_rules! int_specs {
    ($rng:ident, $t:ty) => {
        check!(
            $rng,
            $rng.bits() as $t,
            [<$t>::MIN, <$t>::MAX, 0 as $t],
            [
                "{0}",
                "{0:?}",
                "{0:5}",
                "{0:<7}",
                "{0:^9}",
                "{0:>11}",
                "{0:*^8}",
                "{0:é<6}",
                "{0:+}",
                "{0:+08}",
                "{0:08}",
                "{0:-5}",
                "{0:x}",
                "{0:X}",
                "{0:#x}",
                "{0:#010x}",
                "{0:>#12X}",
                "{0:o}",
                "{0:#o}",
                "{0:b}",
                "{0:#b}",
                "{0:#034b}",
                "{0:e}",
                "{0:E}",
                "{0:.3e}",
                "{0:+12.2E}",
                "{0:x?}",
                "{0:#X?}",
                "{0:08?}",
                "{0:.2}",
                "{0:#?}",
                "{0:_>+#10x}",
                "{0:>05}",
                "a {0} b {{}} {0:#x} }}{{",
            ]
        )
    };
}

macro_rules! float_specs {
    ($rng:ident, $t:ty, $from:expr) => {
        check!(
            $rng,
            $from($rng.bits()),
            [
                0.0,
                -0.0,
                1.5,
                0.1,
                1e20,
                -2.5e-10,
                <$t>::NAN,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                <$t>::MIN_POSITIVE,
                <$t>::MAX
            ],
            [
                "{0}",
                "{0:?}",
                "{0:12}",
                "{0:<12}",
                "{0:^13}",
                "{0:*>14}",
                "{0:+}",
                "{0:012}",
                "{0:+012.3}",
                "{0:.0}",
                "{0:.3}",
                "{0:.17}",
                "{0:e}",
                "{0:E}",
                "{0:.2e}",
                "{0:+15.4E}",
                "{0:#?}",
                "{0:.3?}",
                "{0:10?}",
                "{0:#}",
                "{0:#.0}",
                "{0:-^9.1}",
                "{0:05}",
                "v={0:>8.2} w={0:?}",
            ]
        )
    };
}

#[test]
fn integers_format_as_format_does() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    int_specs!(r, u8);
    int_specs!(r, u16);
    int_specs!(r, u32);
    int_specs!(r, u64);
    int_specs!(r, usize);
    int_specs!(r, i8);
    int_specs!(r, i16);
    int_specs!(r, i32);
    int_specs!(r, i64);
    int_specs!(r, isize);
    // The 128-bit integers that fit in 64 bits (the rest is not recorded).
    check!(r, r.bits() as u128, [0, u64::MAX as u128], ["{0}", "{0:#x}", "{0:>40b}", "{0:e}"]);
    check!(r, r.bits() as i64 as i128, [i64::MIN as i128, -1], ["{0}", "{0:#x}", "{0:040X}", "{0:+e}", "{0:o}"]);
}

#[test]
fn floats_format_as_format_does() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    float_specs!(r, f32, |b: u64| f32::from_bits(b as u32));
    float_specs!(r, f64, f64::from_bits);
    // Values with few digits, where precision rounds visibly.
    float_specs!(r, f64, |b: u64| (b % 2_000_001) as f64 / 1000.0 - 1000.0);
}

#[test]
fn bools_and_chars_format_as_format_does() {
    let mut r = Rng(7);
    check!(
        r,
        r.next() % 2 == 1,
        [true, false],
        ["{0}", "{0:?}", "{0:7}", "{0:>7}", "{0:*^8}", "{0:.2}", "{0:>6.1}", "{0:05}", "{0:+}", "{0:#?}", "{0:8?}",]
    );
    let chars = |b: u64| char::from_u32((b % 0x11_0000) as u32).unwrap_or('\u{fffd}');
    check!(
        r,
        chars(r.next() >> (r.next() >> 60)),
        ['a', '\'', '\n', '\u{0}', '\u{301}', 'é', '😀'],
        ["{0}", "{0:?}", "{0:3}", "{0:>4}", "{0:-^5}", "{0:.0}", "{0:.1}", "{0:05}", "{0:#?}", "{0:6?}", "{0:<4?}",]
    );
}

/// Several arguments, each with its own type and spec.
#[test]
fn several_arguments_format_as_format_does() {
    let mut r = Rng(11);
    for _ in 0..ROUNDS {
        let (a, b, c, d) = (r.bits() as i16, f32::from_bits(r.next() as u32), r.next().is_multiple_of(2), r.bits());
        let recorded = [a.panic_value(), b.panic_value(), c.panic_value(), d.panic_value()];
        let tags = recorded.iter().enumerate().fold(0, |t, (k, r)| t | r.0 << (k as u32 * TAG_BITS));
        let values = [recorded[0].1, recorded[1].1, recorded[2].1, recorded[3].1, 0, 0, 0, 0];
        let fmt = "i = {0:>+6} x = {1:.3e} ok {2} d {3:#x} {0:?} {{}}";
        let want = format!("i = {0:>+6} x = {1:.3e} ok {2} d {3:#x} {0:?} {{}}", a, b, c, d);
        assert_eq!(format_message(fmt, tags, &values, &[]), want);
    }
}

/// The tags and values of `recorded` (tag and bits of each argument).
fn pack(recorded: &[(u32, u64)]) -> (u32, [u64; ARGS]) {
    let mut values = [0; ARGS];
    let mut tags = 0;
    for (k, &(t, b)) in recorded.iter().enumerate() {
        (tags, values[k]) = (tags | t << (k as u32 * TAG_BITS), b);
    }
    (tags, values)
}

/// The record's message buffer as the device's recorder fills it
/// (`arg_panics::__offload_panic_format_end_str`): the bytes of each `str`
/// argument, copied from its address, in `str_bytes`' places. The
/// addresses are this process's, as they are the GPU thread's there.
fn copy_strs(tags: u32, values: &[u64; ARGS]) -> [u8; crate::report::panic_record::MESSAGE_BYTES] {
    let mut buf = [0u8; crate::report::panic_record::MESSAGE_BYTES];
    let capacity = buf.len();
    str_bytes(
        tags,
        capacity,
        |k| values[k],
        |k, start, _, copied| {
            let from = (values[k] & ((1 << 48) - 1)) as *const u8;
            // SAFETY: `from` is the address of a live `str` of the caller's, of
            // at least `copied` bytes.
            buf[start..start + copied].copy_from_slice(unsafe { std::slice::from_raw_parts(from, copied) });
        },
    );
    buf
}

/// Eight arguments, the most a record holds, each with its own type and
/// spec; a ninth index is a placeholder.
#[test]
fn eight_arguments_format_as_format_does() {
    let mut r = Rng(13);
    for _ in 0..ROUNDS {
        let (a, b, c, d) = (r.bits() as i16, f32::from_bits(r.next() as u32), r.next().is_multiple_of(2), r.bits());
        let (e, f, g, h) = (r.bits() as u8, f64::from_bits(r.next()), r.bits() as i64, char::from(r.next() as u8));
        let (tags, values) = pack(&[
            a.panic_value(),
            b.panic_value(),
            c.panic_value(),
            d.panic_value(),
            e.panic_value(),
            f.panic_value(),
            g.panic_value(),
            h.panic_value(),
        ]);
        let fmt = "{0:>+6} {1:.3e} {2} {3:#x} {4:08b} {5:?} {6:+} {7:?} {0} {8}";
        let want = format!("{0:>+6} {1:.3e} {2} {3:#x} {4:08b} {5:?} {6:+} {7:?} {0} {{?}}", a, b, c, d, e, f, g, h)
            + PLACEHOLDER_NOTE;
        assert_eq!(format_message(fmt, tags, &values, &[]), want);
    }
}

/// `str` arguments, copied into the message buffer as the device copies
/// them, with every spec of `str`, among other arguments.
#[test]
fn strs_format_as_format_does() {
    let mut r = Rng(17);
    let words = ["", "a", "even", "odd", "quote\"d", "tab\there", "é😀x", "\u{301}e", "{}", "longer words here"];
    for _ in 0..ROUNDS {
        let (s, t) = (words[r.next() as usize % words.len()], words[r.next() as usize % words.len()]);
        let n = r.bits() as u32;
        let (tags, values) = pack(&[s.panic_value(), n.panic_value(), t.panic_value()]);
        let text = copy_strs(tags, &values);
        let fmt = "{0} {0:?} {0:>8} {0:<7}| {0:^9} {0:*<6} {0:.2} {0:^9.3} {0:8?} {0:05} {1:x} {2} {2:-^12.4} {2:?}";
        let want = format!(
            "{0} {0:?} {0:>8} {0:<7}| {0:^9} {0:*<6} {0:.2} {0:^9.3} {0:8?} {0:05} {1:x} {2} {2:-^12.4} {2:?}",
            s, n, t
        );
        assert_eq!(format_message(fmt, tags, &values, &text), want, "{s:?} {t:?}");
    }
}

/// `str`s longer than the message buffer are cut at the last whole
/// `char` that fits, then `…`; those after them, with no room left, are
/// empty and cut.
#[test]
fn strs_past_the_buffer_are_cut_at_a_char() {
    let first = "x".repeat(300);
    // 2-byte chars from byte 300: 106 of them fit in the 212 bytes left,
    // then one byte of the 107th, which is not printed.
    let second = "é".repeat(150);
    let third = "gone";
    let (tags, values) = pack(&[first.as_str().panic_value(), second.as_str().panic_value(), third.panic_value()]);
    let text = copy_strs(tags, &values);
    let want = format!("{first}|{}…|…", "é".repeat(106));
    assert_eq!(format_message("{0}|{1}|{2}", tags, &values, &text), want);
}

/// Arguments not recorded, indices past the record, specs beyond the
/// supported ones, and text that is not from the kernel macro.
#[test]
fn what_is_not_recorded_is_a_placeholder_and_unknown_specs_print_display() {
    let v = [42, 7, 0, 0, 0, 0, 0, 0];
    let tags = T_U32 | T_NONE << TAG_BITS;
    let noted = |m: &str| format!("{m}{PLACEHOLDER_NOTE}");
    assert_eq!(format_message("x={0} y={1}", tags, &v, &[]), noted("x=42 y={?}"));
    assert_eq!(format_message("{0} {8} {0}", tags, &v, &[]), noted("42 {?} 42"));
    assert_eq!(format_message("{0:p} {0:>1$} {0:.*}", tags, &v, &[]), "42 42 42");
    assert_eq!(format_message("{0:>4}}} {{x}}", tags, &v, &[]), "  42} {x}");
    assert_eq!(format_message("a } b { c", tags, &v, &[]), "a } b { c");
    assert_eq!(format_message("{0", tags, &v, &[]), "{0");
    // An invalid `char` is not formatted as another.
    assert_eq!(format_message("{0}", T_CHAR, &[0xd800, 0, 0, 0, 0, 0, 0, 0], &[]), noted("{?}"));
    // A `str` at an address the record cannot hold (bits 0).
    assert_eq!(format_message("{0}|{1}", T_STR | T_U8 << TAG_BITS, &[0; 8], &[]), noted("{?}|0"));
}
