"""The tree level of ``finite_sample`` without the overlap reduction: the single-neuron law in all D dimensions."""
