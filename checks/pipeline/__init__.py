"""The check pipeline: one page's work item moves forward through its stages.

    plan     checks.pipeline.plan     each target's kind plans its pages
                                      -> CheckBatch rows; a batch's pages
                                      -> PageWork (job + baseline)
    fetch    checks.pipeline.fetch    PageWork -> a response (HTTP or the
                                      browser, through the one door), or a
                                      cached copy -> Outcome
    extract  checks.pipeline.extract  PageWork + response -> Outcome: what
                                      the page says, decided as far as the
                                      baseline's hashes allow (Outcome.pending
                                      when its text must be compared)
    confirm  checks.pipeline.not_found  an Outcome that may be the site's
                                      "not found" page (HTTP 200) -> gone
                                      when a made-up address of the site
                                      answers the same page, else as it was
    compare  checks.pipeline.compare  pending Outcomes + the baselines' text
                                      (one query) -> same or changed, a diff
    judge    checks.pipeline.judge    the model's part (checks.ai.stage) and a
                                      search's judge (checks.search.stage)
    record   checks.pipeline.record   a few pages per transaction: results,
                                      baselines, outbox rows
    notify   checks.notify            outbox rows per channel, delivered
                                      after commit

`outcome` holds the types the stages hand each other (PageWork, Outcome,
Item). `batch` conducts one batch's pages through fetch .. record on one
event loop; checks.runner conducts a check's batches (claim, plan, run,
finish). A stage's module imports the types it takes and gives and the
helpers below the pipeline, never a stage after it, and no stage calls back
into one before it; this package's __init__ imports nothing.
"""
