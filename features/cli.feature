Feature: The mcp-actors command
  As a user of an agent host
  I want one command to list, call and check MCP servers
  So that I can try a configuration before my host uses it

  Scenario: The built-in default works out of the box
    Given a folder without a configuration file
    When the user runs "mcp-actors tools"
    Then the command succeeds
    And the output lists the tool "demo/echo"
    And the output lists the tool "builtin/file-read"

  Scenario: Calling a tool prints its text result
    Given a folder without a configuration file
    When the user runs "mcp-actors call demo/echo '{"text": "hello, actors"}'"
    Then the command succeeds
    And the output is "hello, actors"

  Scenario: A call with bad arguments fails with a classified error
    Given a folder without a configuration file
    When the user runs "mcp-actors call demo/add '{"a": "two"}'"
    Then the command fails with status 1
    And the error output mentions "error: validation:"

  Scenario: A configuration file in the folder is used
    Given a folder with an mcp.json for the demo server named "mine"
    When the user runs "mcp-actors call mine/add '{"a": 20, "b": 22}'"
    Then the command succeeds
    And the output is "42.0"

  Scenario: check names the server and the key of a bad value
    Given a folder with an mcp.json where server "broken" has idleTimeout "-1"
    When the user runs "mcp-actors check"
    Then the command fails with status 2
    And the error output mentions "server 'broken': key 'idleTimeout'"

  Scenario: A Claude Desktop configuration is accepted unchanged
    Given a folder with a Claude Desktop configuration
    When the user runs "mcp-actors check --config claude_desktop_config.json"
    Then the command succeeds
    And the output mentions "time: stdio"
    And the output mentions "top-level key 'globalShortcut' (Claude Desktop) is not used by mcp-actors"
    And the output mentions "top-level key 'preferences' (Claude Desktop) is not used by mcp-actors"

  Scenario: check reports a command that does not exist
    Given a folder with an mcp.json where server "ghost" runs "no-such-mcp-server-xyz"
    When the user runs "mcp-actors check"
    Then the command fails with status 1
    And the error output mentions "error: server 'ghost': command not found: 'no-such-mcp-server-xyz'"

  Scenario: tools says which server failed, lists the rest, and fails
    Given a folder with the demo server as "mine" and a server "ghost" that runs "no-such-mcp-server-xyz"
    When the user runs "mcp-actors tools"
    Then the command fails with status 1
    And the output lists the tool "mine/echo"
    And the error output mentions "error: server 'ghost' did not list its tools"

  Scenario: The built-in tools are off unless the configuration turns them on
    Given a folder with an mcp.json for the demo server named "mine"
    When the user runs "mcp-actors tools"
    Then the command succeeds
    And the output lists the tool "mine/echo"
    And the output lists no tool of the namespace "builtin"

  Scenario: The command says its version
    Given a folder without a configuration file
    When the user runs "mcp-actors --version"
    Then the command succeeds
    And the output is "mcp-actors" and the installed version

  Scenario: call shows every content block, one line for each that is not text
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors call m/media"
    Then the command succeeds
    And the output is:
      """
      Here is everything:
      [image image/png, 1.3 kB]
      [audio audio/wav, 3.4 kB]
      [resource file:///x text/plain]
      [resource media://logo image/png, 100 B]
      [link file:///x]
      """

  Scenario: call saves binary content to a folder and says where each went
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors call m/media --save out"
    Then the command succeeds
    And the output mentions "[image image/png, 1.3 kB] saved to out/image-2.png"
    And the output mentions "[audio audio/wav, 3.4 kB] saved to out/audio-3.wav"
    And the folder holds the files "out/image-2.png, out/audio-3.wav, out/resource-5.png"

  Scenario: A call that reports progress draws nothing when stderr is not a terminal
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors call m/steps '{"count": 3}'"
    Then the command succeeds
    And the output is "3 steps done"
    And the error output is empty

  Scenario: resources lists the resources and the templates
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors resources"
    Then the command succeeds
    And the output mentions "media://notes "
    And the output mentions "media://logo "
    And the output mentions "media://notes/{day}"

  Scenario: read prints a text resource as text
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors read m media://notes"
    Then the command succeeds
    And the output is:
      """
      first note
      second note
      """

  Scenario: read prints a binary resource in one line
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors read m media://logo"
    Then the command succeeds
    And the output is "[resource media://logo image/png, 100 B]"

  Scenario: read of a resource the server does not have fails with the server's reason
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors read m media://nothing-here"
    Then the command fails with status 1
    And the error output mentions "Unknown resource: media://nothing-here"

  Scenario: read of a server that is not configured fails as not found
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors read nowhere media://notes"
    Then the command fails with status 1
    And the error output mentions "error: not_found: no server for namespace 'nowhere' (known: m)"

  Scenario: prompts lists the prompts with their arguments
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors prompts"
    Then the command succeeds
    And the output lists the tool "m/greet"
    And the output lists the tool "m/show"

  Scenario: prompt fills a prompt in and prints its messages
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors prompt m/greet '{"name": "Ada"}'"
    Then the command succeeds
    And the output is "user: Say hello to Ada."

  Scenario: prompt without a required argument is a validation error
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors prompt m/greet '{}'"
    Then the command fails with status 1
    And the error output mentions "error: validation:"

  Scenario: prompt arguments must be text
    Given a folder with an mcp.json for the media server named "m"
    When the user runs "mcp-actors prompt m/greet '{"name": 7}'"
    Then the command fails with status 2
    And the error output mentions "error: prompt arguments must be text: name"
