"""Double-forks a grandchild that outlives its parent (a daemon pattern), prints its pid,
and waits long enough for the grandchild to be adopted and end."""
import os
import sys
import time

r, w = os.pipe()
child = os.fork()
if child == 0:
    grandchild = os.fork()
    if grandchild == 0:
        os.close(r)
        os.write(w, f"{os.getpid()}\n".encode())
        os.close(w)
        time.sleep(2.5)
        os._exit(5)
    os._exit(0)
os.close(w)
os.waitpid(child, 0)
print("grandchild", os.read(r, 64).decode().strip(), flush=True)
time.sleep(4)
sys.exit(0)
