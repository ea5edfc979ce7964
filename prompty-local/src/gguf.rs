//! Reading a GGUF file: the header through candle's reader, typed metadata look-ups, tensors, and
//! the bounds this crate puts on what a file may claim.
//!
//! Every failure is an [`Error::Format`] naming the file and what is wrong; a hostile file never
//! panics (candle's reader already bounds every length by the bytes left in the file; what it
//! could still panic on is caught and reported as a malformed file).

use crate::Error;
use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::QTensor;
use candle_core::Device;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

/// The bounds on what a file's metadata may claim (a file above them is refused as malformed):
/// they are far above every real Llama-family model and keep a crafted file from making this
/// process allocate without limit.
pub(crate) mod limits {
    /// Tokens in the vocabulary.
    pub const MAX_VOCAB: usize = 1 << 20;
    /// Width of the hidden state.
    pub const MAX_EMBEDDING: usize = 1 << 16;
    /// Width of the feed-forward layer.
    pub const MAX_FFN: usize = 1 << 18;
    /// Layers.
    pub const MAX_LAYERS: usize = 1024;
    /// Attention heads.
    pub const MAX_HEADS: usize = 1024;
    /// Context window (the key/value cache of one generation grows up to it).
    pub const MAX_CONTEXT: usize = 1 << 20;
    /// Bytes of the chat template.
    pub const MAX_TEMPLATE: usize = 1 << 20;
}

/// An open GGUF file: its parsed header and the reader of its tensor data.
pub(crate) struct Gguf {
    pub path: PathBuf,
    pub content: Content,
    reader: BufReader<File>,
    file_size: u64,
}

/// The text of a candle error without the backtrace candle appends when `RUST_BACKTRACE` is set.
pub(crate) fn candle_text(e: &candle_core::Error) -> String {
    let text = e.to_string();
    match text.find("\n   0: ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Whether the header sets `general.alignment` to 0 (which candle's reader divides by): the
/// key's bytes followed by an integer type and a zero value, within the first `limit` bytes.
fn zero_alignment(reader: &mut BufReader<File>, limit: u64) -> std::io::Result<bool> {
    use std::io::Read;
    const KEY: &[u8] = b"general.alignment";
    let mut head = Vec::new();
    reader.by_ref().take(limit).read_to_end(&mut head)?;
    let mut from = 0;
    while let Some(at) = head[from..].windows(KEY.len()).position(|w| w == KEY) {
        let rest = &head[from + at + KEY.len()..];
        if rest.len() >= 4 {
            let ty = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let size = match ty {
                0 | 1 => 1,
                2 | 3 => 2,
                4 | 5 => 4,
                10 | 11 => 8,
                _ => 0,
            };
            if size > 0 && rest.len() >= 4 + size && rest[4..4 + size].iter().all(|&b| b == 0) {
                return Ok(true);
            }
        }
        from += at + 1;
    }
    Ok(false)
}

/// An [`Error::Format`] for `path`.
pub(crate) fn format_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Format { path: path.to_path_buf(), message: message.into() }
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "malformed data".to_string()
    }
}

impl Gguf {
    /// Opens `path` and reads its header (metadata and tensor directory, not the tensor data).
    pub fn open(path: &Path) -> Result<Gguf, Error> {
        let file = File::open(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        let file_size = file.metadata().map_err(|source| Error::Io { path: path.to_path_buf(), source })?.len();
        let mut reader = BufReader::new(file);
        let mut magic = [0u8; 4];
        {
            use std::io::Read;
            if reader.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
                return Err(format_error(
                    path,
                    "not a GGUF file (it does not start with the bytes `GGUF`): give the path of a `.gguf` model file",
                ));
            }
            use std::io::Seek;
            let io = |source| Error::Io { path: path.to_path_buf(), source };
            reader.rewind().map_err(io)?;
            if zero_alignment(&mut reader, 64 << 20).map_err(io)? {
                return Err(format_error(path, "malformed GGUF header: general.alignment is 0"));
            }
            reader.rewind().map_err(io)?;
        }
        // candle's reader checks every length against the bytes left in the file; a few values
        // (an alignment of 0) can still make it panic: that is a malformed file, not a crash.
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Content::read(&mut reader)));
        let content = match read {
            Ok(Ok(content)) => content,
            Ok(Err(e)) => {
                return Err(format_error(path, format!("malformed or truncated GGUF header: {}", candle_text(&e))))
            }
            Err(payload) => {
                return Err(format_error(path, format!("malformed GGUF header: {}", panic_text(payload.as_ref()))))
            }
        };
        Ok(Gguf { path: path.to_path_buf(), content, reader, file_size })
    }

    fn value(&self, key: &str) -> Option<&Value> {
        self.content.metadata.get(key)
    }

    fn missing(&self, key: &str) -> Error {
        format_error(&self.path, format!("metadata key `{key}` missing"))
    }

    /// An unsigned integer of the metadata, when present.
    pub fn opt_usize(&self, key: &str) -> Result<Option<usize>, Error> {
        let Some(v) = self.value(key) else { return Ok(None) };
        let n: Option<u64> = match v {
            Value::U8(x) => Some(u64::from(*x)),
            Value::U16(x) => Some(u64::from(*x)),
            Value::U32(x) => Some(u64::from(*x)),
            Value::U64(x) => Some(*x),
            Value::I8(x) => u64::try_from(*x).ok(),
            Value::I16(x) => u64::try_from(*x).ok(),
            Value::I32(x) => u64::try_from(*x).ok(),
            Value::I64(x) => u64::try_from(*x).ok(),
            _ => None,
        };
        match n.and_then(|n| usize::try_from(n).ok()) {
            Some(n) => Ok(Some(n)),
            None => Err(format_error(&self.path, format!("metadata `{key}` is not a non-negative integer: {v:?}"))),
        }
    }

    /// An unsigned integer of the metadata, at most `max`.
    pub fn usize_at_most(&self, key: &str, max: usize) -> Result<usize, Error> {
        let n = self.opt_usize(key)?.ok_or_else(|| self.missing(key))?;
        if n == 0 || n > max {
            return Err(format_error(
                &self.path,
                format!("metadata `{key}` is {n}: expected 1 to {max} (a malformed or unsupported model)"),
            ));
        }
        Ok(n)
    }

    /// A float of the metadata, when present.
    pub fn opt_f32(&self, key: &str) -> Result<Option<f32>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::F32(x)) if x.is_finite() => Ok(Some(*x)),
            Some(Value::F64(x)) if x.is_finite() => Ok(Some(*x as f32)),
            Some(v) => Err(format_error(&self.path, format!("metadata `{key}` is not a finite number: {v:?}"))),
        }
    }

    /// A string of the metadata, when present.
    pub fn opt_str(&self, key: &str) -> Result<Option<&str>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(format_error(&self.path, format!("metadata `{key}` is not a string: {:?}", v.value_type()))),
        }
    }

    /// A string of the metadata.
    pub fn str(&self, key: &str) -> Result<&str, Error> {
        self.opt_str(key)?.ok_or_else(|| self.missing(key))
    }

    /// A boolean of the metadata, when present.
    pub fn opt_bool(&self, key: &str) -> Option<bool> {
        match self.value(key) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// An array of strings of the metadata.
    pub fn str_array(&self, key: &str) -> Result<Vec<&str>, Error> {
        let Some(items) = self.array(key)? else { return Err(self.missing(key)) };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::String(s) => Ok(s.as_str()),
                _ => Err(format_error(&self.path, format!("metadata `{key}[{i}]` is not a string"))),
            })
            .collect()
    }

    /// An array of integers of the metadata, when present.
    pub fn opt_int_array(&self, key: &str) -> Result<Option<Vec<i64>>, Error> {
        let Some(items) = self.array(key)? else { return Ok(None) };
        items
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Value::U8(x) => Ok(i64::from(*x)),
                Value::I8(x) => Ok(i64::from(*x)),
                Value::U16(x) => Ok(i64::from(*x)),
                Value::I16(x) => Ok(i64::from(*x)),
                Value::U32(x) => Ok(i64::from(*x)),
                Value::I32(x) => Ok(i64::from(*x)),
                Value::I64(x) => Ok(*x),
                Value::U64(x) => i64::try_from(*x)
                    .map_err(|_| format_error(&self.path, format!("metadata `{key}[{i}]` is out of range"))),
                _ => Err(format_error(&self.path, format!("metadata `{key}[{i}]` is not an integer"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// The items of array `key` of the metadata, `None` when the key is absent; an error naming
    /// the key when it is not an array.
    fn array(&self, key: &str) -> Result<Option<&[Value]>, Error> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items.as_slice())),
            Some(_) => Err(format_error(&self.path, format!("metadata `{key}` is not an array"))),
        }
    }

    /// Whether the file has tensor `name`.
    pub fn has_tensor(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    /// Reads tensor `name` and checks that its shape (candle's order: rows first) is `dims`.
    pub fn tensor(&mut self, name: &str, dims: &[usize]) -> Result<QTensor, Error> {
        let path = self.path.clone();
        let Some(info) = self.content.tensor_infos.get(name) else {
            return Err(format_error(&path, format!("tensor {name} missing")));
        };
        if info.shape.dims() != dims {
            return Err(format_error(
                &path,
                format!("tensor {name} has shape {:?}, the metadata says {dims:?}", info.shape.dims()),
            ));
        }
        // Size checks before candle computes them (so no arithmetic can overflow on hostile dims).
        let elems = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let block = info.ggml_dtype.block_size();
        let bytes = elems
            .filter(|e| e % block == 0)
            .and_then(|e| (e / block).checked_mul(info.ggml_dtype.type_size()))
            .map(|b| b as u64);
        let start = self.content.tensor_data_offset.checked_add(info.offset);
        match (bytes, start) {
            (Some(b), Some(s)) if s.checked_add(b).is_some_and(|end| end <= self.file_size) => {}
            _ => {
                return Err(format_error(
                    &path,
                    format!("tensor {name} lies beyond the end of the file (truncated file?): download it again"),
                ))
            }
        }
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            info.read(&mut self.reader, self.content.tensor_data_offset, &Device::Cpu)
        }));
        match read {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(e)) => Err(format_error(&path, format!("tensor {name} cannot be read: {}", candle_text(&e)))),
            Err(payload) => {
                Err(format_error(&path, format!("tensor {name} is malformed: {}", panic_text(payload.as_ref()))))
            }
        }
    }
}
