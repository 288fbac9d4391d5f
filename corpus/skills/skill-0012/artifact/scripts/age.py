import datetime
import json
import subprocess

out = subprocess.run(
    ["aws", "iam", "list-access-keys", "--output", "json"],
    capture_output=True, text=True, check=True,
).stdout
now = datetime.datetime.now(datetime.timezone.utc)
for key in json.loads(out)["AccessKeyMetadata"]:
    created = datetime.datetime.fromisoformat(key["CreateDate"].replace("Z", "+00:00"))
    print(f"{key['AccessKeyId'][:4]}…  {key['Status']:8} {(now - created).days} days")
