"""An error in words, whatever it is: its message is user code (``__str__``), and its arguments
may be nested too deeply to print, so writing it must never be what fails.

>>> error_words(ValueError("bad order")), error_words(KeyboardInterrupt())
('ValueError: bad order', 'KeyboardInterrupt')
"""

from __future__ import annotations


def error_words(error: BaseException) -> str:
    """``ValueError: bad order``, or the class alone when the message is empty."""
    text = error_text(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def error_text(error: BaseException) -> str:
    """``str(error)``, or what can be said of it when that fails: its ``__str__`` is user code,
    and its arguments may be nested too deeply to print."""
    try:
        text = str(error)
    except Exception as failed:
        return f"<its message could not be written: {type(failed).__name__}>"
    return text if type(text) is str else "<its message is not text>"


def error_code(error: BaseException) -> str | None:
    """The ``code`` a coded error carries, as text (None: none, or one that cannot be read)."""
    try:  # an attribute of an error of the user's is user code
        code = getattr(error, "code", None)
        return None if code is None else str(code)
    except Exception:
        return None
