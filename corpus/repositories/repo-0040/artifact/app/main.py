import os
import subprocess

from fastapi import FastAPI, Request
from jinja2 import Template

app = FastAPI()


@app.get("/greet")
def greet(name: str = "world"):
    page = Template("<h1>Hello " + name + "</h1>").render()
    return {"html": page}


@app.post("/admin/run")
async def admin_run(request: Request):
    body = await request.json()
    result = subprocess.run(body["argv"], capture_output=True, text=True)
    return {"code": result.returncode, "out": result.stdout}


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=int(os.environ.get("PORT", "8000")))
