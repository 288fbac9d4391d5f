"""`chain/bittensor.py` against a node answering at the SDK's own transport boundary.

The chain cannot run on these machines. The SDK talks to it through one protocol, its
`Substrate` (storage reads, runtime API calls, composing and submitting extrinsics);
`Node` below implements that protocol: it records what the SDK would send and answers
as a subtensor node would (decoded storage values, the neuron runtime API's records,
an inclusion result). Everything above it — the SDK's reads, its SetWeights preflight,
conformance, commit-reveal choice and signing, and assay's chain part — is real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from bittensor import Balance, ExtrinsicResult
from bittensor_core import Keypair

from assay.chain.bittensor import BittensorChain
from assay.records.chain import ChainError, UidWeights

NETUID = 7
HEAD = 5000
VALIDATOR = Keypair.create_from_uri("//Alice")
MINERS = [Keypair.create_from_uri(f"//Miner{i}").ss58_address for i in range(3)]
HOTKEYS = [VALIDATOR.ss58_address, *MINERS]


class Node:
    """A subtensor node for one subnet, at the SDK's `Substrate` boundary."""

    def __init__(self, *, commit_reveal: bool = False, last_update: int = 0) -> None:
        self.token_symbols: dict[int, str] = {}
        self.sent: list[tuple[Any, str]] = []  # (composed call, signer address)
        self.refuse: list[str] = []  # messages of extrinsics the chain will fail, in turn
        self.storage: dict[tuple[str, tuple[Any, ...]], Any] = {
            ("Uids", (NETUID, VALIDATOR.ss58_address)): 0,
            ("CommitRevealWeightsEnabled", (NETUID,)): commit_reveal,
            ("WeightsSetRateLimit", (NETUID,)): 100,
            ("LastUpdate", (NETUID,)): [last_update, 0, 0, 0],
            ("MinAllowedWeights", (NETUID,)): 1,
            ("MaxWeightsLimit", (NETUID,)): 65535,
            ("SubnetEpochConsensus", (NETUID,)): "Yuma",
            ("Tempo", (NETUID,)): 360,
            ("RevealPeriodEpochs", (NETUID,)): 1,
            ("LastEpochBlock", (NETUID,)): HEAD - 40,
            ("PendingEpochAt", (NETUID,)): 0,
            ("SubnetEpochIndex", (NETUID,)): 12,
            ("BlocksSinceLastStep", (NETUID,)): 40,
            ("Kappa", (NETUID,)): 39321,
            ("WeightsVersionKey", (NETUID,)): 3,
            ("SubnetOwnerHotkey", (NETUID,)): MINERS[2],
        }

    def balance(self, rao: int, netuid: int = 0) -> Balance:
        return Balance(int(rao), netuid, None)

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def block_number(self) -> int:
        return HEAD

    async def block_hash(self, block: int | None = None) -> str:
        return f"0x{block or HEAD:064x}"

    async def block_time(self) -> float:
        return 12.0

    async def get_block(
        self, block_number: int | None = None, block_hash: str | None = None
    ) -> dict[str, Any]:
        number = HEAD if block_number is None else block_number
        timestamp = {"call_module": "Timestamp", "call_args": [{"value": 1_700_000_000_000}]}
        return {
            "header": {"number": number, "hash": f"0x{number:064x}"},
            "extrinsics": [{"call": timestamp}],
        }

    async def query(
        self, module: str, name: str, params: Any = None, block_hash: Any = None
    ) -> Any:
        return self.storage.get((name, tuple(params or ())))

    async def query_map(
        self, module: str, name: str, params: Any = None, block_hash: Any = None
    ) -> list[tuple[Any, Any]]:
        if (module, name, params) == ("SubtensorModule", "Weights", [NETUID]):
            return [(0, [(1, 65535), (2, 21845)]), (1, [])]
        if (module, name, params) == ("SubtensorModule", "BlockAtRegistration", [NETUID]):
            return [(uid, 100 * (uid + 1)) for uid in range(len(HOTKEYS))]
        return []

    async def runtime_call(
        self, api: str, method: str, params: list, block_hash: Any = None
    ) -> Any:
        assert (api, method, params) == ("NeuronInfoRuntimeApi", "get_neurons_lite", [NETUID])
        return [
            {
                "uid": uid,
                "hotkey": hotkey,
                "coldkey": hotkey,
                "active": True,
                "validator_permit": uid == 0,
                "last_update": HEAD - 10 - uid,
                "stake": [(hotkey, 1_000_000_000 * (100 if uid == 0 else 1))],
            }
            for uid, hotkey in enumerate(HOTKEYS)
        ]

    async def compose(self, call: Any) -> Any:
        return call

    async def estimate_fee(self, call: Any, keypair: Any) -> Balance:
        return Balance(1000)

    async def submit(self, call: Any, keypair: Any, **_: Any) -> ExtrinsicResult:
        self.sent.append((call, keypair.ss58_address))
        if self.refuse:
            message = self.refuse.pop(0)
            return ExtrinsicResult(success=False, message=message)
        return ExtrinsicResult(
            success=True, message="Success", block_hash="0xfeed", extrinsic_id=f"{HEAD + 1}-0003"
        )


@pytest.fixture(autouse=True)
def _sdk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK caches token symbols under the home folder; keep them in the test's."""
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "symbols.json"))


def chain(node: Node) -> BittensorChain:
    return BittensorChain(network="test", netuid=NETUID, wallet=VALIDATOR, substrate=node)


def test_the_snapshot_is_the_subnet_at_one_block() -> None:
    snapshot = chain(Node()).snapshot()
    assert (snapshot.netuid, snapshot.block) == (NETUID, HEAD)
    assert [n.hotkey for n in snapshot.neurons] == HOTKEYS
    validator = snapshot.neurons[0]
    assert validator.validator_permit and validator.stake == 100.0
    assert validator.weights == pytest.approx({1: 0.75, 2: 0.25}, abs=1e-5)
    assert snapshot.neurons[1].weights == {}
    assert snapshot.hyperparameters.min_allowed_weights == 1
    assert snapshot.problem() is None


def test_the_snapshot_carries_the_anchor_registrations_and_epoch_hyperparameters() -> None:
    snapshot = chain(Node()).snapshot()
    # The anchor is the subnet's last epoch block, whatever block the view reads at.
    assert snapshot.anchor_block == HEAD - 40
    assert snapshot.block_hash == f"0x{HEAD - 40:064x}"
    assert [n.registered_at for n in snapshot.neurons] == [100, 200, 300, 400]
    assert (snapshot.hyperparameters.kappa, snapshot.hyperparameters.version_key) == (39321, 3)
    assert snapshot.owner_uid == 3


def test_plain_weights_are_sent_as_the_conformed_vector_signed_by_the_hotkey() -> None:
    node = Node()
    receipt = chain(node).set_weights("round-0001", UidWeights(uids=(1, 3), weights=(65535, 32768)))
    assert receipt.success and receipt.block == HEAD and not receipt.commit_reveal
    assert receipt.extrinsic_id == f"{HEAD + 1}-0003"
    [(call, signer)] = node.sent
    module, function, params = call
    assert (module, function, signer) == (
        "SubtensorModule",
        "set_mechanism_weights",
        VALIDATOR.ss58_address,
    )
    assert (params["netuid"], params["dests"], params["weights"]) == (
        NETUID,
        [1, 3],
        [65535, 32768],
    )


def test_a_commit_reveal_subnet_gets_a_timelocked_commit() -> None:
    node = Node(commit_reveal=True)
    receipt = chain(node).set_weights("round-0001", UidWeights(uids=(1,), weights=(65535,)))
    [(call, _)] = node.sent
    assert call[1] == "commit_timelocked_mechanism_weights"
    assert receipt.commit_reveal and receipt.reveal_round == call[2]["reveal_round"]
    # The weights travel encrypted: the plain u16 values are not in the call.
    assert "weights" not in call[2]


def test_the_rate_limit_and_a_refusal_are_chain_errors() -> None:
    with pytest.raises(ChainError, match="rate limit"):
        chain(Node(last_update=HEAD - 5)).set_weights("r", UidWeights(uids=(1,), weights=(1,)))
    node = Node()
    node.refuse.append("SettingWeightsTooFast")
    with pytest.raises(ChainError, match="SettingWeightsTooFast"):
        chain(node).set_weights("r", UidWeights(uids=(1,), weights=(1,)))


def test_an_unregistered_hotkey_is_refused_before_anything_is_signed() -> None:
    node = Node()
    stranger = Keypair.create_from_uri("//Stranger")
    other = BittensorChain(network="test", netuid=NETUID, wallet=stranger, substrate=node)
    with pytest.raises(ChainError, match="not registered"):
        other.set_weights("r", UidWeights(uids=(1,), weights=(1,)))
    assert node.sent == []
