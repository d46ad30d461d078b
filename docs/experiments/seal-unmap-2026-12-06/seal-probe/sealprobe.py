"""The seal of a full MAPPED segment, two ways: fdatasync while the file is still mapped
(then munmap), or munmap first (then fdatasync). A second thread of the process spins on the
other CPU, as the broker's threads do, so that write-protecting a mapped page during write-back
must flush that CPU's TLB too. Each round writes a new 512 MiB pre-sized file through a shared
mapping (as a MAPPED segment fed WRITTEN batches), then seals it; prints wall and process CPU
seconds of the seal alone."""
import mmap, os, resource, sys, threading, time

SIZE = 512 << 20
stop = False
def spin():
    x = 0
    while not stop:
        x += 1
threading.Thread(target=spin, daemon=True).start()

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def one(order, path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.posix_fallocate(fd, 0, SIZE)
    m = mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    chunk = b'\xa5' * (1 << 20)
    for off in range(0, SIZE, len(chunk)):
        m[off:off + len(chunk)] = chunk
    t0, c0 = time.monotonic(), cpu()
    if order == 'mapped':
        os.fdatasync(fd)
        m.close()
    else:
        m.close()
        os.fdatasync(fd)
    t1, c1 = time.monotonic(), cpu()
    os.close(fd)
    os.unlink(path)
    return t1 - t0, c1 - c0

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
path = sys.argv[2] if len(sys.argv) > 2 else '/tmp/sealprobe/segment'
for r in range(rounds):
    for order in (('mapped', 'unmapped') if r % 2 == 0 else ('unmapped', 'mapped')):
        wall, cpu_s = one(order, path)
        print(f'{order:9} round {r + 1}: seal {wall * 1000:7.1f} ms wall, {cpu_s * 1000:7.1f} ms CPU (both threads)', flush=True)
stop = True
