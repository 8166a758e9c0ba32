"""SaddleLab HTTP service (FastAPI), its cache and its job queue.

Importing the package (every entry point does, before numpy is loaded) shortens how long OpenBLAS's idle threads
spin after a threaded call before they sleep: 2^28 cycles by default, about 0.1 s, during which each idle thread
holds a core. After the eigendecomposition of a kernel that is a core taken from the API process while it stores
the sweep's points, or from the next computation. 2^22 cycles (about 1.5 ms) still spans the gaps between the
BLAS calls of one factorisation, which takes as long as with the default. A value set in the environment wins.
"""

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "22")
