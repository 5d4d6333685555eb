"""mx.notebook: training callbacks for Jupyter notebooks (MXNet 1.9.1's).

``mx.notebook.callback`` holds ``PandasLogger`` (training, evaluation and epoch
statistics as pandas DataFrames; needs ``pandas``), ``args_wrapper`` (merges several
callback objects' ``model.fit`` arguments) and the live bokeh charts
(``LiveLearningCurve``, ``LiveTimeSeries``), which pymxnet does not draw: they raise
ImportError naming bokeh when it is missing, NotImplementedError otherwise.

As in MXNet, ``bokeh`` here is the bokeh module when it imports, else the placeholder
class ``Bokeh_Failed_To_Import``.
"""


class Bokeh_Failed_To_Import:  # noqa: N801  (MXNet's name)
    """Stands for the bokeh module when it is not installed."""


try:
    import bokeh  # noqa: F401
except ImportError:
    bokeh = Bokeh_Failed_To_Import
