//! Big zero-filled arrays (the transposition table) taken straight from the
//! kernel and given back to it when dropped.
//!
//! Through `malloc`, a freed table stayed with the allocator: glibc raises
//! its mmap threshold to the size of the first big block freed, so every
//! later table came from a heap arena and, freed, stayed resident. A bot
//! that starts and ends games for weeks kept tens of MiB it no longer used.
//! Mapped pages also cost nothing until written (a table fills as the game
//! goes), clearing gives them back (`MADV_DONTNEED`), and a big table asks
//! for transparent huge pages, as Stockfish does, to spare the TLB.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Types whose all-zero bytes are a valid value (integers, atomics, arrays
/// and structs of them).
///
/// # Safety
/// An implementor must be valid when every byte is zero.
pub unsafe trait Zeroable {}

unsafe impl Zeroable for u64 {}
unsafe impl Zeroable for std::sync::atomic::AtomicU64 {}
unsafe impl<T: Zeroable, const N: usize> Zeroable for [T; N] {}

/// A fixed-length array of zeroed `T`s in memory of its own.
pub struct Pages<T: Zeroable> {
    ptr: NonNull<T>,
    len: usize,
}

// Owned memory, like a `Box<[T]>`.
unsafe impl<T: Zeroable + Send> Send for Pages<T> {}
unsafe impl<T: Zeroable + Sync> Sync for Pages<T> {}

/// Page size we assume for alignment (the smallest on the platforms we run).
const PAGE: usize = 4096;

impl<T: Zeroable> Pages<T> {
    /// `len` zeroed elements. Aborts on allocation failure, as `Vec` does.
    pub fn zeroed(len: usize) -> Pages<T> {
        Self::try_zeroed(len).unwrap_or_else(|| {
            std::alloc::handle_alloc_error(
                std::alloc::Layout::from_size_align(Self::bytes_for(len).max(1), PAGE)
                    .unwrap_or(std::alloc::Layout::new::<T>()),
            )
        })
    }

    /// `len` zeroed elements, or `None` when the system cannot give the
    /// memory (or its size overflows).
    pub fn try_zeroed(len: usize) -> Option<Pages<T>> {
        const { assert!(std::mem::align_of::<T>() <= PAGE) };
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if bytes == 0 {
            return Some(Pages {
                ptr: NonNull::dangling(),
                len,
            });
        }
        let ptr = sys::map(bytes)?;
        Some(Pages {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Zeroes every element; mapped pages go back to the kernel until
    /// written again.
    pub fn zero(&mut self) {
        let bytes = Self::bytes_for(self.len);
        if bytes == 0 {
            return;
        }
        // SAFETY: the region is ours (we hold `&mut self`) and `bytes` long;
        // all-zero is a valid `T`.
        unsafe { sys::zero(self.ptr.cast(), bytes) }
    }

    fn bytes_for(len: usize) -> usize {
        len.checked_mul(std::mem::size_of::<T>())
            .expect("table size overflows usize")
    }
}

impl<T: Zeroable> Deref for Pages<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` zero-initialised (hence valid) `T`s, or dangling
        // with no bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> DerefMut for Pages<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes it exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zeroable> Drop for Pages<T> {
    fn drop(&mut self) {
        let bytes = Self::bytes_for(self.len);
        if bytes != 0 {
            // SAFETY: mapped by `sys::map(bytes)` and not used after this.
            unsafe { sys::unmap(self.ptr.cast(), bytes) }
        }
    }
}

impl<T: Zeroable> Default for Pages<T> {
    fn default() -> Pages<T> {
        Pages::zeroed(0)
    }
}

#[cfg(unix)]
mod sys {
    use std::ptr::NonNull;

    /// Tables from this size on ask for huge pages.
    #[cfg(target_os = "linux")]
    const HUGE: usize = 2 << 20;

    pub fn map(bytes: usize) -> Option<NonNull<u8>> {
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        #[cfg(target_os = "linux")]
        if bytes >= HUGE {
            // Advice only: where THP is off this fails and changes nothing.
            // SAFETY: the range is the mapping just made.
            unsafe { libc::madvise(p, bytes, libc::MADV_HUGEPAGE) };
        }
        NonNull::new(p.cast())
    }

    /// # Safety
    /// `p` and `bytes` are a live mapping from `map`, not borrowed.
    pub unsafe fn zero(p: NonNull<u8>, bytes: usize) {
        // On Linux, a private anonymous page dropped this way reads as zero
        // afterwards, and costs no memory until written.
        #[cfg(target_os = "linux")]
        if unsafe { libc::madvise(p.as_ptr().cast(), bytes, libc::MADV_DONTNEED) } == 0 {
            return;
        }
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0, bytes) }
    }

    /// # Safety
    /// `p` and `bytes` are a live mapping from `map`, not used afterwards.
    pub unsafe fn unmap(p: NonNull<u8>, bytes: usize) {
        unsafe { libc::munmap(p.as_ptr().cast(), bytes) };
    }
}

#[cfg(not(unix))]
mod sys {
    use std::alloc::{Layout, alloc_zeroed, dealloc};
    use std::ptr::NonNull;

    fn layout(bytes: usize) -> Layout {
        Layout::from_size_align(bytes, super::PAGE).expect("table layout")
    }

    pub fn map(bytes: usize) -> Option<NonNull<u8>> {
        // SAFETY: `bytes` is not zero (checked by the caller).
        NonNull::new(unsafe { alloc_zeroed(layout(bytes)) })
    }

    /// # Safety
    /// `p` and `bytes` come from `map`, not borrowed.
    pub unsafe fn zero(p: NonNull<u8>, bytes: usize) {
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0, bytes) }
    }

    /// # Safety
    /// `p` and `bytes` come from `map`, not used afterwards.
    pub unsafe fn unmap(p: NonNull<u8>, bytes: usize) {
        unsafe { dealloc(p.as_ptr(), layout(bytes)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_writable_and_zeroed_again() {
        let mut p: Pages<[u64; 8]> = Pages::zeroed(100_000);
        assert_eq!(p.len(), 100_000);
        assert!(p.iter().all(|b| b.iter().all(|&w| w == 0)));
        assert_eq!(p.as_ptr() as usize % 64, 0);
        for (i, b) in p.iter_mut().enumerate() {
            b[i % 8] = i as u64 + 1;
        }
        assert_eq!(p[99_999][99_999 % 8], 100_000);
        p.zero();
        assert!(p.iter().all(|b| b.iter().all(|&w| w == 0)));
        p[7][3] = 5;
        assert_eq!(p[7][3], 5);
    }

    #[test]
    fn empty_is_fine() {
        let mut p: Pages<u64> = Pages::zeroed(0);
        assert!(p.is_empty());
        p.zero();
        let d: Pages<u64> = Pages::default();
        assert!(d.is_empty());
    }
}
