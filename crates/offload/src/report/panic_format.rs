//! The host's half of a GPU panic message with format arguments (see
//! [`panic_args`](crate::report::panic_args)): formats the recorded format
//! string with the recorded values, as `format!` does for the same values.
//!
//! The format string comes from the kernel macro with every argument
//! explicit: `{N}` or `{N:spec}`, `N` the argument's index, `spec` the
//! user's (`[[fill]align][sign][#][0][width][.precision][type]`, literal
//! widths and precisions only: the macro keeps its placeholder for `$` and
//! `*`), and `{{`/`}}` for braces. Each value is rebuilt with its type
//! (the tag) and formatted by `std`'s own `Display`, `Debug`, `LowerHex`, …
//! with the spec's sign, `#`, `0`, width and precision; fill and
//! alignment are applied here, as `core::fmt::Formatter::padding` does
//! (width in `char`s; numbers right-aligned, `bool` and `char` left by
//! default; `0` pads numbers after their sign and prefix and overrides
//! fill and alignment). A spec this does not know (another type letter, a
//! letter the type does not implement) prints the value with `{}`; an
//! argument that was not recorded prints [`PLACEHOLDER`], and the
//! message then ends with [`PLACEHOLDER_NOTE`]. A `str`
//! argument ([`T_STR`]) is read from the bytes the recorder copied into
//! the record's message buffer (`str_bytes`); one cut where the buffer
//! ends prints its whole UTF-8 characters that fit, then `…`.

use std::fmt::{Binary, Debug, Display, LowerExp, LowerHex, Octal, UpperExp, UpperHex};
use std::format;
use std::string::String;

use crate::report::panic_args::*;

/// A recorded argument with its type.
#[derive(Clone, Copy)]
enum Value<'a> {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    U128(u128),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    F32(f32),
    F64(f64),
    Bool(bool),
    Char(char),
    Str(&'a str),
}

impl Value<'_> {
    /// The value of `tag` with `bits` (see `panic_args`); `None`: not
    /// recorded, or a `str` ([`T_STR`], whose text the caller has).
    fn new(tag: u32, bits: u64) -> Option<Value<'static>> {
        Some(match tag {
            T_U8 => Value::U8(bits as u8),
            T_U16 => Value::U16(bits as u16),
            T_U32 => Value::U32(bits as u32),
            T_U64 => Value::U64(bits),
            T_U128 => Value::U128(bits as u128),
            T_I8 => Value::I8(bits as i8),
            T_I16 => Value::I16(bits as i16),
            T_I32 => Value::I32(bits as i32),
            T_I64 => Value::I64(bits as i64),
            T_I128 => Value::I128(bits as i64 as i128),
            T_F32 => Value::F32(f32::from_bits(bits as u32)),
            T_F64 => Value::F64(f64::from_bits(bits)),
            T_BOOL => Value::Bool(bits != 0),
            T_CHAR => Value::Char(char::from_u32(bits as u32)?),
            _ => return None,
        })
    }
}

/// An alignment of a spec.
#[derive(Clone, Copy, PartialEq)]
enum Align {
    Left,
    Center,
    Right,
}

/// A parsed `spec` (see the module docs).
struct Spec<'a> {
    fill: char,
    align: Option<Align>,
    plus: bool,
    alternate: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    /// `""`, `"?"`, `"x"`, `"X"`, `"o"`, `"b"`, `"e"`, `"E"`, `"x?"`, `"X?"`.
    ty: &'a str,
}

/// The message `fmt` (see the module docs) with argument `k` the value
/// of tag `(tags >> (k * TAG_BITS)) & 0xf` and bits `values[k]`; `text`:
/// the record's message buffer, with the bytes of the `str` arguments.
pub(crate) fn format_message(fmt: &str, tags: u32, values: &[u64; ARGS], text: &[u8]) -> String {
    let mut strs: [Option<String>; ARGS] = Default::default();
    str_bytes(
        tags,
        text.len(),
        |k| values[k],
        |k, start, len, copied| {
            if values[k] == 0 {
                // Not recorded (`T_STR`).
                return;
            }
            let bytes = &text[start..start + copied];
            let whole = match std::str::from_utf8(bytes) {
                Ok(s) => s,
                // SAFETY: `valid_up_to` bytes are valid UTF-8 (its docs).
                Err(e) => unsafe { std::str::from_utf8_unchecked(&bytes[..e.valid_up_to()]) },
            };
            let cut = if copied < len { "…" } else { "" };
            strs[k] = Some(format!("{whole}{cut}"));
        },
    );
    let (mut out, mut placeholders) = (String::new(), false);
    let mut rest = fmt;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (c, after) = (rest.as_bytes()[i], &rest[i + 1..]);
        if after.as_bytes().first() == Some(&c) {
            out.push(c as char);
            rest = &after[1..];
            continue;
        }
        let Some(end) = after.find('}').filter(|_| c == b'{') else {
            // Not from the kernel macro: kept as it is.
            out.push(c as char);
            rest = after;
            continue;
        };
        match argument(&after[..end], tags, values, &strs) {
            Some(arg) => out.push_str(&arg),
            None => (out, placeholders) = (out + PLACEHOLDER, true),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    if placeholders {
        out.push_str(PLACEHOLDER_NOTE);
    }
    out
}

/// The text of one `{N:spec}` (`field` is what is between the braces);
/// `None` where the argument was not recorded.
fn argument(field: &str, tags: u32, values: &[u64; ARGS], strs: &[Option<String>; ARGS]) -> Option<String> {
    let (index, spec) = field.split_once(':').unwrap_or((field, ""));
    let value = index.trim().parse::<usize>().ok().filter(|&k| k < ARGS).and_then(|k| match &strs[k] {
        Some(s) => Some(Value::Str(s)),
        None => Value::new((tags >> (k as u32 * TAG_BITS)) & ((1 << TAG_BITS) - 1), values[k]),
    });
    Some(match parse_spec(spec) {
        Some(spec) => render(value?, &spec),
        None => render(value?, &parse_spec("").expect("the empty spec")),
    })
}

/// `[[fill]align][sign][#][0][width][.precision][type]`; `None` for
/// anything else.
fn parse_spec(s: &str) -> Option<Spec<'_>> {
    let align_of = |c: char| match c {
        '<' => Some(Align::Left),
        '^' => Some(Align::Center),
        '>' => Some(Align::Right),
        _ => None,
    };
    let mut spec =
        Spec { fill: ' ', align: None, plus: false, alternate: false, zero: false, width: 0, precision: None, ty: "" };
    let mut chars = s.chars();
    let (first, second) = (chars.next(), chars.next());
    let mut rest = match (first, second.and_then(align_of)) {
        (Some(fill), Some(align)) => {
            (spec.fill, spec.align) = (fill, Some(align));
            &s[fill.len_utf8() + 1..]
        }
        _ => match first.and_then(align_of) {
            Some(align) => {
                spec.align = Some(align);
                &s[1..]
            }
            None => s,
        },
    };
    let mut flag = |c: char| match rest.strip_prefix(c) {
        Some(r) => {
            rest = r;
            true
        }
        None => false,
    };
    spec.plus = flag('+');
    // `-`: accepted and unused (`std::fmt`, "Sign/#/0").
    let _ = spec.plus || flag('-');
    spec.alternate = flag('#');
    spec.zero = flag('0');
    let digits = |r: &mut &str| -> Option<usize> {
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        let (d, tail) = r.split_at(n);
        *r = tail;
        if d.is_empty() {
            None
        } else {
            d.parse().ok()
        }
    };
    spec.width = digits(&mut rest).unwrap_or(0);
    if let Some(r) = rest.strip_prefix('.') {
        rest = r;
        spec.precision = Some(digits(&mut rest)?);
    }
    spec.ty = match rest {
        "" | "?" | "x" | "X" | "o" | "b" | "e" | "E" | "x?" | "X?" => rest,
        _ => return None,
    };
    Some(spec)
}

/// `value` formatted by `std` with `spec`'s sign, `#`, `0` (with the
/// width), precision and type; `{}` where `types` lacks the type.
macro_rules! std_format {
    ($v:expr, $spec:expr, [$($t:literal),*]) => {{
        let (v, s) = ($v, $spec);
        let (w, p) = (if s.zero { s.width } else { 0 }, s.precision.unwrap_or(0));
        match (s.plus, s.alternate, s.zero, s.precision.is_some(), s.ty) {
            $(
                (false, false, false, false, $t) => format!(concat!("{:", $t, "}"), v),
                (false, false, false, true, $t) => format!(concat!("{:.p$", $t, "}"), v, p = p),
                (false, false, true, false, $t) => format!(concat!("{:0w$", $t, "}"), v, w = w),
                (false, false, true, true, $t) => format!(concat!("{:0w$.p$", $t, "}"), v, w = w, p = p),
                (false, true, false, false, $t) => format!(concat!("{:#", $t, "}"), v),
                (false, true, false, true, $t) => format!(concat!("{:#.p$", $t, "}"), v, p = p),
                (false, true, true, false, $t) => format!(concat!("{:#0w$", $t, "}"), v, w = w),
                (false, true, true, true, $t) => format!(concat!("{:#0w$.p$", $t, "}"), v, w = w, p = p),
                (true, false, false, false, $t) => format!(concat!("{:+", $t, "}"), v),
                (true, false, false, true, $t) => format!(concat!("{:+.p$", $t, "}"), v, p = p),
                (true, false, true, false, $t) => format!(concat!("{:+0w$", $t, "}"), v, w = w),
                (true, false, true, true, $t) => format!(concat!("{:+0w$.p$", $t, "}"), v, w = w, p = p),
                (true, true, false, false, $t) => format!(concat!("{:+#", $t, "}"), v),
                (true, true, false, true, $t) => format!(concat!("{:+#.p$", $t, "}"), v, p = p),
                (true, true, true, false, $t) => format!(concat!("{:+#0w$", $t, "}"), v, w = w),
                (true, true, true, true, $t) => format!(concat!("{:+#0w$.p$", $t, "}"), v, w = w, p = p),
            )*
            _ => format!("{}", v),
        }
    }};
}

/// An integer with `spec` (all of `std`'s integer formats).
fn integer<T>(v: T, spec: &Spec<'_>) -> String
where
    T: Display + Debug + LowerHex + UpperHex + Octal + Binary + LowerExp + UpperExp,
{
    std_format!(v, spec, ["", "?", "x", "X", "o", "b", "e", "E", "x?", "X?"])
}

/// A float with `spec`.
fn float<T: Display + Debug + LowerExp + UpperExp>(v: T, spec: &Spec<'_>) -> String {
    std_format!(v, spec, ["", "?", "e", "E"])
}

/// A `bool`, `char` or `str` with `spec` (no `0` flag: `std` pads them
/// with the fill; a precision cuts a `str` to that many `char`s).
fn text<T: Display + Debug>(v: T, spec: &Spec<'_>) -> String {
    let spec = Spec { zero: false, ..*spec };
    std_format!(v, &spec, ["", "?"])
}

/// `value` with `spec`, padded as `core::fmt` pads it.
fn render(value: Value<'_>, spec: &Spec<'_>) -> String {
    let body = match value {
        Value::U8(v) => integer(v, spec),
        Value::U16(v) => integer(v, spec),
        Value::U32(v) => integer(v, spec),
        Value::U64(v) => integer(v, spec),
        Value::U128(v) => integer(v, spec),
        Value::I8(v) => integer(v, spec),
        Value::I16(v) => integer(v, spec),
        Value::I32(v) => integer(v, spec),
        Value::I64(v) => integer(v, spec),
        Value::I128(v) => integer(v, spec),
        Value::F32(v) => float(v, spec),
        Value::F64(v) => float(v, spec),
        Value::Bool(v) => text(v, spec),
        // `char`'s `Debug` writes the quoted char without padding.
        Value::Char(v) if spec.ty == "?" => return format!("{v:?}"),
        Value::Char(v) => text(v, spec),
        Value::Str(v) if spec.ty == "?" => return format!("{v:?}"),
        Value::Str(v) => text(v, spec),
    };
    let numeric = !matches!(value, Value::Bool(_) | Value::Char(_) | Value::Str(_));
    if numeric && spec.zero {
        // `std` padded it (with zeros, after the sign and prefix).
        return body;
    }
    let default = if numeric { Align::Right } else { Align::Left };
    pad(body, spec.fill, spec.align.unwrap_or(default), spec.width)
}

/// `body` padded to `width` `char`s with `fill` (`Formatter::padding`:
/// centered text gets the odd fill `char` on the right).
fn pad(body: String, fill: char, align: Align, width: usize) -> String {
    let n = width.saturating_sub(body.chars().count());
    let (before, after) = match align {
        Align::Left => (0, n),
        Align::Right => (n, 0),
        Align::Center => (n / 2, n - n / 2),
    };
    let fill_n = |k: usize| std::iter::repeat_n(fill, k).collect::<String>();
    format!("{}{body}{}", fill_n(before), fill_n(after))
}

#[cfg(test)]
#[path = "panic_format_tests.rs"]
mod tests;
