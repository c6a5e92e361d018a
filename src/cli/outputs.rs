//! The output files of `wgpu-split run`: checked for room before any work, written into a
//! temporary directory beside DIR as the stream produces them, moved into DIR on success.
//! A failure drops the temporary directory and leaves DIR as it was.

use super::exit::{CliError, CliResult};
use super::progress::Progress;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use wgpu_split::bench::byte_count;
use wgpu_split::{npy, DType, OutputSink};

/// Outputs up to this many keep their files open for the whole stream; more are opened for
/// each window's write, to stay within the process's limit on open files.
const KEEP_OPEN: usize = 256;

fn io_error(what: &Path, e: std::io::Error) -> CliError {
    CliError {
        code: 2,
        message: format!("{}: {e}", what.display()),
    }
}

/// The directory that holds DIR, where the temporary directory goes.
fn parent_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    }
}

/// What the outputs will be: file names and `.npy` headers, decided from the plan alone.
pub struct OutputFiles {
    names: Vec<String>,
    headers: Vec<Vec<u8>>,
    /// Bytes of all files, headers included.
    pub total_bytes: u64,
}

impl OutputFiles {
    /// The files of outputs of `shapes` (a plan's, or permutations of them) for elements of
    /// `dtype`.
    pub fn new(shapes: &[Vec<usize>], dtype: DType) -> CliResult<Self> {
        let mut total_bytes = 0u64;
        let mut names = Vec::with_capacity(shapes.len());
        let mut headers = Vec::with_capacity(shapes.len());
        for (i, shape) in shapes.iter().enumerate() {
            let header = npy::header_bytes(dtype, shape)?;
            let data = byte_count(shape, dtype)? as u64;
            total_bytes = total_bytes.saturating_add(header.len() as u64 + data);
            names.push(format!("output_{i}.npy"));
            headers.push(header);
        }
        Ok(Self {
            names,
            headers,
            total_bytes,
        })
    }

    /// The file names, in output order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Refuses outputs that cannot fit on the filesystem that will hold DIR, naming both sizes.
    pub fn check_room(&self, dir: &Path) -> CliResult<()> {
        let parent = parent_of(dir);
        let Some(free) = free_bytes(&existing_ancestor(&parent)) else {
            return Ok(());
        };
        if self.total_bytes > free {
            return Err(CliError::usage(format!(
                "the outputs need {} bytes, but the filesystem of {} has {free} bytes free",
                self.total_bytes,
                parent.display()
            )));
        }
        Ok(())
    }

    /// Creates a temporary directory beside `dir` with every file holding its header.
    pub fn stage(self, dir: &Path, progress: Progress) -> CliResult<Staged> {
        let parent = parent_of(dir);
        std::fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(".wgpu-split-")
            .tempdir_in(&parent)
            .map_err(|e| io_error(&parent, e))?;
        let keep_open = self.names.len() <= KEEP_OPEN;
        let mut open = Vec::new();
        for (name, header) in self.names.iter().zip(&self.headers) {
            let path = tmp.path().join(name);
            let mut file = BufWriter::new(File::create(&path).map_err(|e| io_error(&path, e))?);
            file.write_all(header).map_err(|e| io_error(&path, e))?;
            match keep_open {
                true => open.push(file),
                false => {
                    file.flush().map_err(|e| io_error(&path, e))?;
                }
            }
        }
        Ok(Staged {
            tmp,
            names: self.names,
            open,
            progress,
        })
    }
}

/// The nearest directory of `path` that exists (DIR's parent may not exist yet).
fn existing_ancestor(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    while !p.exists() {
        match p.parent() {
            Some(up) if !up.as_os_str().is_empty() => p = up.to_path_buf(),
            _ => return Path::new(".").to_path_buf(),
        }
    }
    p
}

/// Bytes an unprivileged user may still write on the filesystem of `path`.
#[cfg(unix)]
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a statvfs struct the call fills in.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

/// Elsewhere the check is left to the writes, which fail with the system's error.
#[cfg(not(unix))]
fn free_bytes(_: &Path) -> Option<u64> {
    None
}

/// The output files being written, in a temporary directory that is removed if dropped.
pub struct Staged {
    /// Open files, when there are at most [`KEEP_OPEN`] outputs (closed before `tmp` goes).
    open: Vec<BufWriter<File>>,
    tmp: tempfile::TempDir,
    names: Vec<String>,
    progress: Progress,
}

impl OutputSink for Staged {
    fn write(&mut self, output: usize, bytes: &[u8]) -> std::io::Result<()> {
        match self.open.get_mut(output) {
            Some(file) => file.write_all(bytes),
            None => OpenOptions::new()
                .append(true)
                .open(self.tmp.path().join(&self.names[output]))?
                .write_all(bytes),
        }
    }

    fn progress(&mut self, done: u64, total: u64) {
        self.progress.update(done, total);
    }
}

impl Staged {
    /// Flushes the files and moves them into `dir`: the staged directory becomes `dir` if it
    /// does not exist; otherwise the files replace their namesakes and stale `output_{i}.npy`
    /// files with i >= k are removed.
    pub fn commit(mut self, dir: &Path) -> CliResult<()> {
        self.progress.finish();
        for (file, name) in self.open.iter_mut().zip(&self.names) {
            file.flush().map_err(|e| io_error(Path::new(name), e))?;
        }
        self.open.clear();
        if !dir.exists() {
            let staged = self.tmp.keep();
            return std::fs::rename(&staged, dir).map_err(|e| io_error(dir, e));
        }
        for name in &self.names {
            std::fs::rename(self.tmp.path().join(name), dir.join(name))
                .map_err(|e| io_error(Path::new(name), e))?;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let index = name
                .strip_prefix("output_")
                .and_then(|r| r.strip_suffix(".npy"))
                .and_then(|i| i.parse::<usize>().ok());
            if index.is_some_and(|i| i >= self.names.len()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }
}
