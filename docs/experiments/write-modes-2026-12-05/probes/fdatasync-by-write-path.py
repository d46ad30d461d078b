"""fdatasync latency and block writes per fdatasync for each way of writing a log file (grow with pwrite; pwrite or mmap stores into fallocate-d, sparse or pre-zeroed space), 1 000 writes of 1 280 and 20 480 B, one thread. Needs /tmp/fsprobe/ and the disk at /sys/block/vda. Run: python3 fdatasync-by-write-path.py"""
import os, time, mmap, sys
N=1000
SIZE=64<<20
def stat():
    f=open("/sys/block/vda/stat").read().split()
    return int(f[4]), int(f[15]) if len(f)>15 else 0  # writes completed, flushes
def run(prep, how, chunk):
    path="/tmp/fsprobe/m"; fd=os.open(path, os.O_RDWR|os.O_CREAT|os.O_TRUNC, 0o644)
    if prep=="fallocate": os.posix_fallocate(fd,0,SIZE)
    elif prep=="sparse": os.ftruncate(fd,SIZE)
    elif prep=="zeroed":
        z=b"\0"*(1<<20)
        for i in range(SIZE>>20): os.pwrite(fd,z,i<<20)
    os.fsync(fd)
    mm = mmap.mmap(fd, SIZE) if how=="mmap" else None
    buf=b"x"*chunk; off=0; lat=[]
    w0,f0=stat()
    for i in range(N):
        if how=="mmap": mm[off:off+chunk]=buf
        else: os.pwrite(fd,buf,off)
        off+=chunk
        t=time.perf_counter_ns(); os.fdatasync(fd); lat.append(time.perf_counter_ns()-t)
    w1,f1=stat()
    if mm: mm.close()
    os.close(fd); os.unlink(path); lat.sort()
    return lat[N//2]/1000, (w1-w0)/N, (f1-f0)/N
for chunk in [1280, 20480]:
  for prep,how in [("none","pwrite"),("fallocate","pwrite"),("fallocate","mmap"),("sparse","mmap"),("zeroed","mmap"),("zeroed","pwrite")]:
    p50,w,fl=run(prep,how,chunk)
    print(f"chunk {chunk:6d} {prep:9s} {how:6s} p50 {p50:6.1f} us  writes/fsync {w:4.2f} flushes/fsync {fl:4.2f}", flush=True)
