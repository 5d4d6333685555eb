"""mxnet.tools.parse_log on Module (mx.model) and Gluon Estimator log lines."""
import pytest

from mxnet.tools import parse_log

MODULE_LOG = """\
INFO:root:Epoch[0] Batch [0-50]\tSpeed: 1000.00 samples/sec\taccuracy=0.500000
INFO:root:Epoch[0] Batch [50-100]\tSpeed: 3000.00 samples/sec\taccuracy=0.700000
INFO:root:Epoch[0] Train-accuracy=0.812500
INFO:root:Epoch[0] Train-cross-entropy=0.520000
INFO:root:Epoch[0] Time cost=12.345
INFO:root:Epoch[0] Validation-accuracy=0.800000
INFO:root:Epoch[0] Validation-cross-entropy=0.550000
INFO:root:Epoch[1] Train-accuracy=0.900000
INFO:root:Epoch[1] Time cost=11.000
INFO:root:Epoch[1] Validation-accuracy=0.880000
unrelated line
"""

GLUON_LOG = """\
INFO:Estimator:[Epoch 0] Begin, current learning rate: 0.1000
INFO:Estimator:[Epoch 0][Batch 99][Samples 6400] time/interval: 1.000s training accuracy: 0.5
INFO:Estimator:[Epoch 0] Finished in 3.500s, training accuracy: 0.7500, training softmaxcrossentropyloss: 0.6000, validation accuracy: 0.7000, validation softmaxcrossentropyloss: 0.6500
INFO:Estimator:[Epoch 1] Finished in 3.000s, training accuracy: 0.8500, validation accuracy: 0.8000
"""


def test_module_log_markdown():
    table = parse_log.parse_lines(MODULE_LOG.splitlines())
    assert table[0] == {"speed": 2000.0, "train-accuracy": 0.8125,
                        "train-cross-entropy": 0.52, "time": 12.345,
                        "val-accuracy": 0.8, "val-cross-entropy": 0.55}
    text = parse_log.format_table(table)
    assert text.splitlines() == [
        "| epoch | train-accuracy | train-cross-entropy | val-accuracy | val-cross-entropy "
        "| time | speed |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        "| 1 | 0.812500 | 0.520000 | 0.800000 | 0.550000 | 12.3 | 2000.0 |",
        "| 2 | 0.900000 |  | 0.880000 |  | 11.0 |  |"]


def test_gluon_log_csv_and_metric_filter():
    table = parse_log.parse_lines(GLUON_LOG.splitlines())
    assert table[1] == {"time": 3.0, "train-accuracy": 0.85, "val-accuracy": 0.8}
    text = parse_log.format_table(table, "csv", metric_names=["accuracy"])
    assert text == ("epoch,train-accuracy,val-accuracy,time\n"
                    "1,0.750000,0.700000,3.5\n2,0.850000,0.800000,3.0\n")


def test_command_line(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_text(MODULE_LOG)
    assert parse_log.main([str(log), "--format", "none", "--metric-names", "accuracy"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "epoch\ttrain-accuracy\tval-accuracy\ttime\tspeed",
        "1\t0.812500\t0.800000\t12.3\t2000.0", "2\t0.900000\t0.880000\t11.0\t"]
    (tmp_path / "empty.log").write_text("nothing here\n")
    assert parse_log.main([str(tmp_path / "empty.log")]) == 1
    assert parse_log.main([str(tmp_path / "missing.log")]) == 2
    with pytest.raises(ValueError, match="unknown format"):
        parse_log.format_table({0: {"time": 1.0}}, "html")
