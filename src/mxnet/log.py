"""mx.log: loggers with MXNet's compact format (level letter, time, file:line).

``get_logger(name, filename, filemode, level)`` returns a ``logging.Logger``; the first
call for a name adds one handler (a file when filename is given, else stderr) whose
formatter writes ``I0123 12:34:56 42 file.py:10] message``.
"""
import logging
import sys
import time
import warnings

__all__ = ["get_logger", "getLogger", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG",
           "NOTSET"]

CRITICAL, ERROR, WARNING = logging.CRITICAL, logging.ERROR, logging.WARNING
INFO, DEBUG, NOTSET = logging.INFO, logging.DEBUG, logging.NOTSET

PY3 = True


class _Formatter(logging.Formatter):
    """Formats records as '<L><mmdd> <hh:mm:ss> <pid> <file>:<line>] <message>', coloured
    on a terminal."""

    _COLOURS = {CRITICAL: "\x1b[35m", ERROR: "\x1b[31m", WARNING: "\x1b[33m",
                INFO: "\x1b[32m", DEBUG: "\x1b[34m"}

    def __init__(self, colored=True):
        self.colored = colored
        super().__init__(datefmt="%m%d %H:%M:%S")

    def _label(self, level):
        if level >= CRITICAL:
            return "C"
        if level >= ERROR:
            return "E"
        if level >= WARNING:
            return "W"
        if level >= INFO:
            return "I"
        if level >= DEBUG:
            return "D"
        return "U"

    def format(self, record):
        label = self._label(record.levelno)
        when = time.strftime(self.datefmt, time.localtime(record.created))
        head = f"{label}{when} {record.process} {record.filename}:{record.lineno}]"
        if self.colored:
            head = f"{self._COLOURS.get(record.levelno, '')}{head}\x1b[0m"
        return f"{head} {record.getMessage()}" + (
            "\n" + self.formatException(record.exc_info) if record.exc_info else "")


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """A logger with MXNet's format. The handler (file when filename is given, else
    stderr) is added once per logger; level is set on every call."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", None):
        logger._init_done = True  # pylint: disable=protected-access
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
            handler.setFormatter(_Formatter(colored=False))
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter(colored=sys.stderr.isatty()))
        logger.addHandler(handler)
    logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING):  # noqa: N802
    """Deprecated spelling of get_logger."""
    warnings.warn("getLogger is deprecated, use get_logger instead.", DeprecationWarning,
                  stacklevel=2)
    return get_logger(name, filename, filemode, level)
