"""The records that cross stage walls, in one home with one serialiser (`codec`).

| module | record | made by | read by |
| --- | --- | --- | --- |
| agent | `Agent`: code, entrypoint, hash | intake, store | plan, runner, store |
| plan | `RoundPlan`, `PlannedTask` | validator.planning | engine, store, attest, reports |
| observed | `Observed`: one detonation (`context.observed`) | detonate | runner, store |
| usage | `InferenceUsage`, `Exchange`, `Body` | the inference proxy | outcome, rep record, attest |
| outcome | `RunOutcome`: one rep as run and judged | runner | store, engine, attest |
| rep | `RepRecord`: one rep as scored (`assay score` reads them) | from outcomes | scoring |
| scorecard | `Scorecard` and its views | validator.scoring | store, reports, CLI |
| diagnostics | `Diagnostics`: CPU and inference per rep | from rep records | reports, CLI |
| round | `RoundResult`: what every output reads | validator | reports, CLI |
"""
