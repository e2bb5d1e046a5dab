Feature: Runtime supervision and the message API
  As an agent host
  I want crashed MCP servers restarted under their restart policy
  And a message API to the registry actor that always answers
  So that tool calls keep working and never hang

  # -------------------------------------------------------------------
  # Restart policy
  # -------------------------------------------------------------------

  Scenario: A permanent server is restarted after its process dies
    Given a runtime supervising mock server "gh" with restart policy "permanent"
    When the agent host calls "gh/list_repos"
    And mock server "gh" dies
    Then supervised server "gh" becomes "running" with 1 restart
    And the agent host can call "gh/list_repos" again

  Scenario: A transient server is restarted after a crash found by a health check
    Given a runtime supervising mock server "gh" with restart policy "transient" and health checks every 0.05 seconds
    When the agent host calls "gh/list_repos"
    And mock server "gh" goes silent
    Then supervised server "gh" becomes "running" with 1 restart
    And supervised server "gh" counted 1 health check failure

  Scenario: A temporary server stays down after a crash and starts again on the next call
    Given a runtime supervising mock server "gh" with restart policy "temporary"
    When the agent host calls "gh/list_repos"
    And mock server "gh" dies
    Then supervised server "gh" becomes "stopped" with 0 restarts
    And mock server "gh" was connected 1 time
    When the agent host calls "gh/list_repos"
    Then supervised server "gh" becomes "running" with 0 restarts
    And mock server "gh" was connected 2 times

  Scenario: Too many restarts leave a server failed until an explicit start
    Given a runtime supervising mock server "gh" that refuses connections, allowing 2 restarts
    When the agent host calls "gh/list_repos"
    Then supervised server "gh" becomes "failed" with 2 restarts
    When the agent host calls "gh/list_repos"
    Then the agent host's last call failed with error type "failed"
    When mock server "gh" accepts connections again
    And the agent host starts supervised server "gh" explicitly
    Then supervised server "gh" becomes "running" with 2 restarts
    And the agent host can call "gh/list_repos" again

  # -------------------------------------------------------------------
  # The message API
  # -------------------------------------------------------------------

  Scenario: Tell the registry a CallTool and wait on its reply slot
    Given a runtime supervising mock server "gh" with restart policy "transient"
    When the agent host tells the registry a CallTool for "gh/list_repos"
    Then the CallTool reply slot holds a successful result within 5 seconds

  Scenario: Ask the registry and get the reply future at once
    Given a runtime supervising mock server "gh" whose calls take 0.5 seconds
    When the agent host asks the registry with a CallTool for "gh/list_repos"
    Then the ask answered at once with the message's own reply slot
    And the CallTool reply slot holds a successful result within 5 seconds

  Scenario: A call to an unknown namespace is answered not_found
    Given a runtime supervising mock server "gh" with restart policy "transient"
    When the agent host tells the registry a CallTool for "nope/list_repos"
    Then the CallTool reply slot holds a failure of type "not_found" within 5 seconds

  Scenario: Status requests are answered through their reply slots
    Given a runtime supervising mock server "gh" with restart policy "transient"
    When the agent host tells the registry a GetStatus
    Then the GetStatus reply lists supervised server "gh" as "idle"
