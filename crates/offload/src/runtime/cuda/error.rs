//! CUDA driver errors as [`Error::Driver`].

use cudarc::driver::result::DriverError;

use crate::runtime::error::Error;

/// Turns a driver error into [`Error::Driver`].
pub(crate) fn driver_error(op: &'static str, kernel: Option<&str>, e: DriverError) -> Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| "CUDA_ERROR_UNKNOWN".into());
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Error::from(crate::error::Driver { op, kernel: kernel.map(Into::into), code: e.0 as u32, name, text, log: None })
}
