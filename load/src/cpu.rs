//! CPU time, for "CPU seconds per GiB" figures: this process (`getrusage`) and a child process
//! (`/proc/<pid>/stat`).
//!
//! Why both: when the broker is embedded, the client and the broker share this process and one
//! `getrusage` cannot tell their costs apart. The fetch workload therefore runs the broker as a
//! child process and reads the child's own counters, while `getrusage(RUSAGE_SELF)` covers the
//! client alone.

use anyhow::Context;

/// CPU seconds (user + system) this process has used so far.
#[allow(unsafe_code)] // getrusage(2) has no safe wrapper in std or rustix.
pub fn process_cpu_seconds() -> f64 {
    let mut slot = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `slot` is valid for writes of a `rusage` for the whole call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, slot.as_mut_ptr()) };
    // RUSAGE_SELF with a valid pointer cannot fail; checked before the value is trusted.
    assert_eq!(rc, 0, "getrusage(RUSAGE_SELF) failed");
    // SAFETY: getrusage returned 0, so it initialised the whole struct.
    let usage = unsafe { slot.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// CPU seconds (user + system, all threads) the process `pid` has used so far, from
/// `/proc/<pid>/stat` (resolution: one clock tick, normally 10 ms).
pub fn pid_cpu_seconds(pid: u32) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name (field 2) is in parentheses and may contain spaces; fields after the
    // last ')' start with field 3 (state). utime and stime are fields 14 and 15.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("no ')' in /proc/<pid>/stat")?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let field = |number: usize| -> anyhow::Result<u64> {
        fields
            .get(number - 3)
            .with_context(|| format!("/proc/{pid}/stat has no field {number}"))?
            .parse::<u64>()
            .with_context(|| format!("/proc/{pid}/stat field {number} is not a number"))
    };
    let ticks = field(14)? + field(15)?;
    Ok(ticks as f64 / clock_ticks_per_second())
}

/// `sysconf(_SC_CLK_TCK)`: the unit of the times in `/proc/<pid>/stat`.
#[allow(unsafe_code)] // sysconf(3) has no safe wrapper in std.
fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf reads a constant of the C library; it has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}
