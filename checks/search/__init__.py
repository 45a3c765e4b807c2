"""Search targets: watch the web for new results that match a goal.

providers/  one class per search provider behind one small interface
            (SearXNG, Brave Search, Tavily, Firecrawl), through the door
canonical   a result's canonical URL (its key) and the domain rules
gather      every query run, results merged, filtered, capped (plan time)
source      SearchSource: the target's page jobs and SearchRun row
stage       per batch: seen before, or fetched and judged; each result's
            status and its SearchResultState
report      the target's line in targetResults when the check ends
"""
