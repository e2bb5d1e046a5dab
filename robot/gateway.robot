*** Settings ***
Documentation     The gateway as an MCP host reaches it: ``mcp-actors serve --http`` in front of the
...               SDK fixture server (over stdio), driven with the SDK's MCP client: tools listed
...               (from the schema cache, without starting the server, once it has run), a tool
...               called, tool search, and ``/healthz`` reporting each server's state.
Library           OperatingSystem
Library           actors.testing.robotlib
Suite Setup       Write Gateway Config
Suite Teardown    Remove Directory    ${FOLDER}    recursive=True
Test Teardown     Stop Gateway

*** Variables ***
${ROOT}           ${CURDIR}/..

*** Test Cases ***
Tools Are Listed And A Tool Is Called Through The Gateway
    Start Gateway    ${CONFIG}
    Gateway Server State Should Be    fx    idle
    Gateway Tools Should Include    fx__echo    fx__add    other__echo
    ${text}=    Call Gateway Tool    fx__echo    {"text": "hello"}
    Gateway Result Should Succeed
    Should Be Equal    ${text}    hello
    Gateway Server State Should Be    fx    running

A Second Gateway Lists From The Schema Cache Without Starting Anything
    Start Gateway    ${CONFIG}
    Gateway Tools Should Include    fx__echo
    Stop Gateway
    Start Gateway    ${CONFIG}
    Gateway Tools Should Include    fx__echo    other__add
    Gateway Server State Should Be    fx    idle
    Gateway Server State Should Be    other    idle

Health Reports Every Server Without Waking Any
    Start Gateway    ${CONFIG}
    Call Gateway Tool    other__add    {"a": 1, "b": 2}
    Gateway Result Should Succeed
    ${health}=    Gateway Health
    Should Be Equal    ${health}[status]    ok
    Should Be Equal    ${health}[servers][other][state]    running
    Should Be Equal    ${health}[servers][fx][state]    idle

A Failing Tool Is An Error Result
    Start Gateway    ${CONFIG}
    ${text}=    Call Gateway Tool    fx__fail    {"message": "boom"}
    Should Contain    ${text}    boom
    Run Keyword And Expect Error    *the call failed*    Gateway Result Should Succeed

Tool Search Lists Two Tools And Forwards Calls
    Start Gateway    ${CONFIG}    --tool-search
    ${tools}=    List Gateway Tools
    Should Be Equal    ${tools}    ${{["search_tools", "call_tool"]}}
    ${found}=    Call Gateway Tool    search_tools    {"query": "add two integers", "limit": 1}
    Should Contain    ${found}    "name": "fx__add"
    ${sum}=    Call Gateway Tool    call_tool    {"name": "other__add", "arguments": {"a": 2, "b": 3}}
    Should Be Equal    ${sum}    5

*** Keywords ***
Write Gateway Config
    ${folder}=    Set Variable    ${TEMPDIR}/mcp-actors-gateway-robot-${{os.getpid()}}
    Remove Directory    ${folder}    recursive=True
    Create Directory    ${folder}
    Set Environment Variable    MCP_ACTORS_CACHE_DIR    ${folder}/cache
    Set Environment Variable    MCP_ACTORS_PINS_DIR    ${folder}/pins
    ${python}=    Evaluate    sys.executable
    ${fixture}=    Set Variable    "command": "${python}", "args": ["-m", "tests.servers.fixture_server"], "cwd": "${ROOT}"
    Create File    ${folder}/mcp.json    {"mcpServers": {"fx": {${fixture}}, "other": {${fixture}}}}
    Set Suite Variable    ${FOLDER}    ${folder}
    Set Suite Variable    ${CONFIG}    ${folder}/mcp.json
