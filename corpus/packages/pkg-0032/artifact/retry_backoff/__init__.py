"""Retry a function with exponential backoff."""

import functools
import time


def retry(attempts=3, base_delay=0.1, exceptions=(Exception,)):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for attempt in range(attempts):
                try:
                    return fn(*args, **kwargs)
                except exceptions:
                    if attempt == attempts - 1:
                        raise
                    time.sleep(base_delay * 2**attempt)

        return wrapper

    return decorate
