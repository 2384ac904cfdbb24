# Free loopback ports for the scripts that start servers (sourced:
# `. tools/ports.sh`): the test suites and the benchmarks.

# A port free on 127.0.0.1 now (the kernel's pick).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A port p with p and its Redis Cluster bus port p + 10000 both free.
free_cluster_port() {
  python3 -c '
import random, socket
while True:
    p = random.randint(20000, 45000)
    try:
        for q in (p, p + 10000):
            socket.socket().bind(("127.0.0.1", q))
        print(p); break
    except OSError:
        pass'
}
