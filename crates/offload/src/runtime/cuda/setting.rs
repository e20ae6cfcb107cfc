//! The backend's environment settings' on/off words.

/// An on/off setting of the backend's (`OFFLOAD_CUDA_STAGING`,
/// `OFFLOAD_CUDA_MEMPOOL`), any case, blanks around it ignored:
/// `Some(false)` for `0`, `false`, `no`, `off`; `Some(true)` for `1`,
/// `true`, `yes`, `on`; `None` for anything else (the empty value
/// included: each setting says what that means).
pub(super) fn switch(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "0" | "false" | "no" | "off" => Some(false),
        "1" | "true" | "yes" | "on" => Some(true),
        _ => None,
    }
}
