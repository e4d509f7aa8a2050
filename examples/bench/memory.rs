//! Peak resident memory of this process, from `/proc/self/status` (Linux): the
//! peak is reset before a figure and read after it.

/// Resets the peak (`VmHWM`) to the current resident size; a no-op where the
/// kernel does not offer it.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident size since the last reset, in MiB (0 when unknown).
pub fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}
