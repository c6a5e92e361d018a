//! `.npy` files to and from [`HostTensor`]s.
//!
//! npyz parses and writes the header; the data is handled as raw bytes so every value,
//! NaN payloads included, passes through unchanged. Big-endian files are byte-swapped per
//! element and Fortran-order files are reordered to C order on reading.

use crate::error::{Result, SplitError};
use crate::tensor::{byte_count, HostTensor};
use crate::DType;
use ndarray::{ArrayViewD, IxDyn};
use npyz::{TypeChar, TypeStr, WriterBuilder};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// Maps a numpy type string to a dtype and whether its bytes are big-endian.
fn dtype_of(ts: &TypeStr) -> Option<(DType, bool)> {
    let size = ts.size_field() as usize;
    let dtype = match (ts.type_char(), size) {
        (TypeChar::Bool, 1) => DType::Bool,
        (TypeChar::Int, 1) => DType::I8,
        (TypeChar::Uint, 1) => DType::U8,
        (TypeChar::Int, 2) => DType::I16,
        (TypeChar::Uint, 2) => DType::U16,
        (TypeChar::Float, 2) => DType::F16,
        (TypeChar::Int, 4) => DType::I32,
        (TypeChar::Uint, 4) => DType::U32,
        (TypeChar::Float, 4) => DType::F32,
        (TypeChar::Int, 8) => DType::I64,
        (TypeChar::Uint, 8) => DType::U64,
        (TypeChar::Float, 8) => DType::F64,
        (TypeChar::Complex, 8) => DType::Complex64,
        (TypeChar::Complex, 16) => DType::Complex128,
        (TypeChar::UnicodeStr, n) if n > 0 => DType::Utf32(n),
        _ => return None,
    };
    Some((dtype, ts.endianness() == npyz::Endianness::Big))
}

/// The little-endian numpy type string of a dtype (`<f4`, `|b1`, `<U5`).
pub fn type_str(dtype: DType) -> Result<String> {
    Ok(match dtype {
        DType::Bool => "|b1".into(),
        DType::I8 => "|i1".into(),
        DType::U8 => "|u1".into(),
        DType::I16 => "<i2".into(),
        DType::U16 => "<u2".into(),
        DType::F16 => "<f2".into(),
        DType::I32 => "<i4".into(),
        DType::U32 => "<u4".into(),
        DType::F32 => "<f4".into(),
        DType::I64 => "<i8".into(),
        DType::U64 => "<u8".into(),
        DType::F64 => "<f8".into(),
        DType::Complex64 => "<c8".into(),
        DType::Complex128 => "<c16".into(),
        DType::Utf32(n) => format!("<U{n}"),
        // bf16, and any dtype a later core adds.
        other => {
            let name = other.name();
            return Err(SplitError::File(format!("{name} has no .npy type string")));
        }
    })
}

/// What a `.npy` header says about the data after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Element type.
    pub dtype: DType,
    /// Shape, in elements.
    pub shape: Vec<usize>,
    /// Whether the scalars are stored big-endian (swapped to little-endian on reading).
    pub big_endian: bool,
    /// Whether the data is in Fortran (column-major) order (reordered to C order on reading).
    pub fortran_order: bool,
    /// Bytes before the data: the header's own size.
    pub data_offset: u64,
}

/// Counts the bytes a reader hands out, to find where a header ends.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

impl Header {
    /// Parses the header at the start of `reader`, which is left at the first data byte;
    /// `name` labels errors. No data is read.
    pub fn read(reader: impl Read, name: &str) -> Result<Self> {
        let bad = |why: String| SplitError::File(format!("{name}: {why}"));
        let mut counting = Counting {
            inner: reader,
            count: 0,
        };
        let header = npyz::NpyHeader::from_reader(&mut counting)
            .map_err(|e| bad(format!("not a valid .npy file ({e})")))?;
        let ts = match header.dtype() {
            npyz::DType::Plain(ts) => ts,
            other => {
                return Err(bad(format!(
                    "structured dtype {} is not supported",
                    other.descr()
                )))
            }
        };
        let (dtype, big_endian) = dtype_of(&ts).ok_or_else(|| {
            bad(format!(
                "dtype {ts} is not supported (bool, i1, u1, i2, u2, f2, i4, u4, f4, i8, u8, f8, c8, c16, <U)"
            ))
        })?;
        let shape: Vec<usize> = header
            .shape()
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| bad(format!("dimension {d} is too large"))))
            .collect::<Result<_>>()?;
        byte_count(&shape, dtype).map_err(|e| bad(e.to_string()))?;
        Ok(Self {
            dtype,
            fortran_order: header.order() == npyz::Order::Fortran && shape.len() > 1,
            shape,
            big_endian,
            data_offset: counting.count,
        })
    }

    /// Bytes of data the shape and dtype need.
    pub fn data_bytes(&self) -> Result<u64> {
        Ok(byte_count(&self.shape, self.dtype)? as u64)
    }

    /// Checks that a file holds exactly the data its header announces: `len` bytes after the
    /// header, neither truncated nor followed by trailing bytes.
    pub fn check_data_len(&self, len: u64, name: &str) -> Result<()> {
        let (shape, dtype) = (&self.shape, self.dtype);
        let expected = self.data_bytes()?;
        let bad = |why: String| Err(SplitError::File(format!("{name}: {why}")));
        if len < expected {
            return bad(format!(
                "truncated: shape {shape:?} of {dtype} needs {expected} data bytes, the file has {len}"
            ));
        }
        if len > expected {
            return bad(format!(
                "{} bytes of trailing data after the {expected} bytes shape {shape:?} of {dtype} needs",
                len - expected
            ));
        }
        Ok(())
    }

    /// Bytes of one scalar as stored: the halves of a complex and the code points of a string
    /// are swapped one by one.
    fn scalar_size(&self) -> usize {
        match self.dtype {
            DType::Complex64 => 4,
            DType::Complex128 => 8,
            DType::Utf32(_) => 4,
            d => d.size(),
        }
    }

    /// The whole data as stored turned into little-endian C-order bytes: scalars swapped if
    /// the file is big-endian, elements reordered if it is in Fortran order.
    fn to_c_order(&self, mut data: Vec<u8>, name: &str) -> Result<Vec<u8>> {
        if self.big_endian {
            swap_scalars(&mut data, self.scalar_size());
        }
        if !self.fortran_order {
            return Ok(data);
        }
        fortran_to_c(&data, &self.shape, self.dtype.size())
            .map_err(|e| SplitError::File(format!("{name}: {e}")))
    }
}

/// Reverses the bytes of each `scalar`-byte scalar of `data` (whole scalars).
fn swap_scalars(data: &mut [u8], scalar: usize) {
    data.chunks_exact_mut(scalar).for_each(|c| c.reverse());
}

/// Parses `.npy` bytes; `name` labels errors.
pub fn from_bytes(bytes: &[u8], name: &str) -> Result<HostTensor> {
    let mut rest = bytes;
    let header = Header::read(&mut rest, name)?;
    header.check_data_len(rest.len() as u64, name)?;
    let data = header.to_c_order(rest.to_vec(), name)?;
    HostTensor::new(header.dtype, header.shape, data)
}

/// A file's big-endian data as little-endian bytes, swapped as it is read.
struct LittleEndianReader<R> {
    inner: R,
    scalar: usize,
    /// Data bytes not yet read from `inner`.
    left: u64,
    /// The rest of a scalar swapped for a read shorter than one.
    pending: Vec<u8>,
}

impl<R: Read> Read for LittleEndianReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pending.is_empty() && buf.len() < self.scalar && self.left > 0 {
            // A read shorter than a scalar: swap one whole scalar and hand it out in parts.
            let mut one = vec![0; self.scalar];
            self.inner.read_exact(&mut one)?;
            swap_scalars(&mut one, self.scalar);
            self.left -= self.scalar as u64;
            self.pending = one;
        }
        if !self.pending.is_empty() {
            let n = buf.len().min(self.pending.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            return Ok(n);
        }
        let n = (buf.len() / self.scalar * self.scalar).min(self.left as usize);
        self.inner.read_exact(&mut buf[..n])?;
        swap_scalars(&mut buf[..n], self.scalar);
        self.left -= n as u64;
        Ok(n)
    }
}

/// Opens a `.npy` file: parses its header and checks the file's size against it, reading no
/// data. Returns the header and a reader of the data as little-endian C-order bytes.
///
/// C-order data is read straight from the file (big-endian data swapped as it is read), so a
/// caller can stream it in bounded memory. Fortran-order data of rank 2 or more is reordered
/// in memory first: it takes its own size in memory.
pub fn open(path: &Path) -> Result<(Header, Box<dyn Read + Send>)> {
    let name = path.display().to_string();
    let io_error = |e: io::Error| SplitError::File(format!("{name}: {e}"));
    let mut file = File::open(path).map_err(io_error)?;
    let len = file.metadata().map_err(io_error)?.len();
    let header = Header::read(BufReader::new(&file), &name)?;
    header.check_data_len(len.saturating_sub(header.data_offset), &name)?;
    file.seek(SeekFrom::Start(header.data_offset))
        .map_err(io_error)?;
    if header.fortran_order {
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(io_error)?;
        let data = header.to_c_order(data, &name)?;
        return Ok((header, Box::new(io::Cursor::new(data))));
    }
    if header.big_endian {
        let reader = LittleEndianReader {
            inner: file,
            scalar: header.scalar_size(),
            left: header.data_bytes()?,
            pending: Vec::new(),
        };
        return Ok((header, Box::new(reader)));
    }
    Ok((header, Box::new(file)))
}

/// Reorders Fortran-order element bytes to C order.
fn fortran_to_c(data: &[u8], shape: &[usize], elem: usize) -> Result<Vec<u8>, ndarray::ShapeError> {
    // Fortran data of shape S is C data of the reversed shape; reversing the axes back gives
    // the logical array, whose C-order iteration is the wanted byte order.
    let mut reversed: Vec<usize> = shape.iter().rev().copied().collect();
    reversed.push(elem);
    let view = ArrayViewD::from_shape(IxDyn(&reversed), data)?;
    let mut axes: Vec<usize> = (0..shape.len()).rev().collect();
    axes.push(shape.len());
    Ok(view.permuted_axes(IxDyn(&axes)).iter().copied().collect())
}

/// Reads a `.npy` file: [`open`], then its data into one buffer.
pub fn read(path: &Path) -> Result<HostTensor> {
    let (header, mut data) = open(path)?;
    let mut bytes = room_for(header.data_bytes()?, &path.display().to_string())?;
    data.read_to_end(&mut bytes)
        .map_err(|e| SplitError::File(format!("{}: {e}", path.display())))?;
    HostTensor::new(header.dtype, header.shape, bytes)
}

/// An empty buffer with room for `len` data bytes of the file `name`. A header may announce
/// more data than memory holds: that is an error, not an aborted allocation.
fn room_for(len: u64, name: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|n| bytes.try_reserve_exact(n).ok())
        .ok_or_else(|| {
            SplitError::TooLarge(format!("{name}: {len} data bytes do not fit in memory"))
        })?;
    Ok(bytes)
}

/// The `.npy` header of C-order little-endian data of `dtype` and `shape`.
pub fn header_bytes(dtype: DType, shape: &[usize]) -> Result<Vec<u8>> {
    let ts: TypeStr = type_str(dtype)?
        .parse()
        .map_err(|e| SplitError::File(format!("{e}")))?;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut out = Vec::with_capacity(128);
    npyz::WriteOptions::new_header_only()
        .dtype(npyz::DType::Plain(ts))
        .shape(&shape)
        .writer(&mut out)
        .write_header_only()
        .map_err(|e| SplitError::File(format!("writing a .npy header: {e}")))?;
    Ok(out)
}

/// Serialises a tensor as `.npy` bytes (C order, little-endian).
pub fn to_bytes(tensor: &HostTensor) -> Result<Vec<u8>> {
    let mut out = header_bytes(tensor.dtype(), tensor.shape())?;
    out.extend_from_slice(tensor.bytes());
    Ok(out)
}

/// Writes a `.npy` file.
pub fn write(path: &Path, tensor: &HostTensor) -> Result<()> {
    std::fs::write(path, to_bytes(tensor)?)
        .map_err(|e| SplitError::File(format!("{}: {e}", path.display())))
}

/// Decodes a `<U` tensor's elements to strings (trailing NULs dropped, as numpy does).
pub fn utf32_strings(tensor: &HostTensor) -> Result<Vec<String>> {
    let DType::Utf32(n) = tensor.dtype() else {
        return Err(SplitError::DataMismatch(format!(
            "{} is not a string dtype",
            tensor.dtype()
        )));
    };
    tensor
        .bytes()
        .chunks_exact(4 * n)
        .map(|el| {
            el.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .take_while(|&cp| cp != 0)
                .map(|cp| {
                    char::from_u32(cp).ok_or_else(|| {
                        SplitError::DataMismatch(format!("{cp:#x} is not a Unicode scalar value"))
                    })
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        let t = HostTensor::from_slice(
            &[2, 3],
            &[1.5f32, -0.0, f32::from_bits(0x7fc0_0123), 4.0, 5.0, 6.0],
        )
        .unwrap();
        let bytes = to_bytes(&t).unwrap();
        assert_eq!(from_bytes(&bytes, "t").unwrap(), t);
        let e = from_bytes(&bytes[..bytes.len() - 3], "t.npy").unwrap_err();
        assert!(e.to_string().starts_with("t.npy: truncated"), "{e}");
        assert!(from_bytes(b"PK\x03\x04 not npy", "x").is_err());
        assert!(from_bytes(&[], "x").is_err());
    }

    #[test]
    fn big_endian_data_reads_whole_in_reads_of_any_length() {
        let stored: Vec<u8> = (0..24).collect();
        for chunk in [1, 3, 5, 8, 64] {
            let mut reader = LittleEndianReader {
                inner: &stored[..],
                scalar: 4,
                left: 24,
                pending: Vec::new(),
            };
            let mut got = Vec::new();
            let mut buf = vec![0; chunk];
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            let want: Vec<u8> = stored
                .chunks(4)
                .flat_map(|c| c.iter().rev().copied())
                .collect();
            assert_eq!(got, want, "reads of {chunk}");
        }
    }

    #[test]
    fn data_larger_than_memory_is_an_error() {
        assert_eq!(room_for(16, "x.npy").unwrap().capacity(), 16);
        let e = room_for(u64::MAX, "x.npy").unwrap_err();
        assert!(matches!(e, SplitError::TooLarge(_)), "{e}");
        let rule = format!("x.npy: {} data bytes do not fit in memory", u64::MAX);
        assert!(e.to_string().contains(&rule), "{e}");
    }

    #[test]
    fn fortran_order_becomes_c_order() {
        // [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
        let header = "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }";
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        let pad = 64 - (10 + header.len() + 1) % 64;
        let text = format!("{header}{}\n", " ".repeat(pad % 64));
        file.extend_from_slice(&(text.len() as u16).to_le_bytes());
        file.extend_from_slice(text.as_bytes());
        for v in [0i16, 3, 1, 4, 2, 5] {
            file.extend_from_slice(&v.to_le_bytes());
        }
        let t = from_bytes(&file, "f").unwrap();
        assert_eq!(t.to_vec::<i16>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn strings_decode() {
        let mut bytes = Vec::new();
        for s in ["ab", "c"] {
            let mut cps: Vec<u32> = s.chars().map(|c| c as u32).collect();
            cps.resize(2, 0);
            cps.iter()
                .for_each(|c| bytes.extend_from_slice(&c.to_le_bytes()));
        }
        let t = HostTensor::new(DType::Utf32(2), vec![2], bytes).unwrap();
        assert_eq!(
            utf32_strings(&t).unwrap(),
            vec!["ab".to_string(), "c".to_string()]
        );
        assert_eq!(from_bytes(&to_bytes(&t).unwrap(), "s").unwrap(), t);
    }
}
