"""Samplers, chains and diagnostics for the finite networks behind each theory. Knows no physics."""
