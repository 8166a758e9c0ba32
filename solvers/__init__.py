"""SaddleLab solvers: the engine (``solvers.core``) and one subpackage per theory."""

SOLVER_VERSION = "0.2.0"
