"""AMP entry points. Not implemented in pymxnet yet: each raises NotImplementedError."""

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model",
           "convert_symbol", "convert_hybrid_block", "convert_bucketing_module",
           "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops",
           "list_conditional_fp32_ops", "list_widest_type_cast",
           "list_loss_output_functions", "list_lp16_use_fp32_params"]


def _missing(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"mxnet.contrib.amp.{name}: automatic mixed precision "
                                  f"is not implemented in pymxnet yet")
    fn.__name__ = name
    fn.__doc__ = f"AMP's {name}: not implemented in pymxnet yet (NotImplementedError)."
    return fn


for _name in __all__:
    globals()[_name] = _missing(_name)
del _name
