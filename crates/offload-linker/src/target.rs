//! The device targets the linker handles.

/// The device targets the linker handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `nvptx64-nvidia-cuda`: the output is PTX text.
    Nvptx64,
    /// `amdgcn-amd-amdhsa`: the output is an AMD GPU code object (ELF).
    Amdgcn,
}

impl Target {
    /// Parses a target triple, as rustc passes it with `--target`.
    pub fn from_triple(triple: &str) -> Option<Self> {
        match triple {
            t if t.starts_with("nvptx64-nvidia-cuda") => Some(Target::Nvptx64),
            t if t.starts_with("amdgcn-amd-amdhsa") => Some(Target::Amdgcn),
            _ => None,
        }
    }

    /// The canonical triple.
    pub fn triple(self) -> &'static str {
        match self {
            Target::Nvptx64 => "nvptx64-nvidia-cuda",
            Target::Amdgcn => "amdgcn-amd-amdhsa",
        }
    }
}
