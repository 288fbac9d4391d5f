import pickle

import requests
from fastapi import FastAPI, Request

app = FastAPI()


@app.get("/preview")
def preview(url: str):
    response = requests.get(url, timeout=5)
    return {"status": response.status_code, "length": len(response.content)}


@app.post("/session")
async def restore_session(request: Request):
    body = await request.body()
    state = pickle.loads(body)
    return {"restored": sorted(state)}
