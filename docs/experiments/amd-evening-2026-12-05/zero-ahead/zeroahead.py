"""fdatasync after each append into a fallocate-d 256 MiB file, 2 000 appends per case, one thread: plain pwrite, or zero-ahead (pwrite Z bytes of zeros past the end whenever the end comes within Z/2 of the zeroed end). Needs /tmp/fsprobe/. Run: python3 zeroahead.py"""
import os, time, sys, statistics as st
N=2000; SIZE=256<<20
def run(chunk, Z):
    path="/tmp/fsprobe/z"; fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_TRUNC, 0o644)
    os.posix_fallocate(fd,0,SIZE); os.fsync(fd)
    buf=b"x"*chunk; off=0; horizon=0; lat=[]; zeros=b"\0"*Z if Z else b""
    t0=time.perf_counter_ns()
    for i in range(N):
        if Z and off+chunk > horizon - Z//2:
            start=max(horizon, off); os.pwrite(fd, zeros, start); horizon=start+Z
        os.pwrite(fd,buf,off); off+=chunk
        t=time.perf_counter_ns(); os.fdatasync(fd); lat.append(time.perf_counter_ns()-t)
    total=(time.perf_counter_ns()-t0)/N/1000
    os.close(fd); os.unlink(path); lat.sort()
    return lat[N//2]/1000, st.mean(lat)/1000, total
for chunk in [128, 1300, 10400, 20800]:
    for Z in [0, 256<<10, 1<<20]:
        p50,mean,tot=run(chunk,Z)
        print(f"chunk {chunk:6d} zero-ahead {Z>>10:5d} KiB  fsync p50 {p50:6.1f} mean {mean:6.1f} us; per append {tot:6.1f} us", flush=True)
