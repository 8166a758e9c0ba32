"""The engine: fixed-point iteration, Newton, catalogues, continuation. Knows no physics."""
