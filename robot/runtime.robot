*** Settings ***
Documentation     The actor runtime against a real MCP server (the SDK fixture server over stdio):
...               lazy start, calls through the registry actor, idle stop, crash and restart.
Library           actors.testing.robotlib
Suite Setup       Set Suite Variable    ${PYTHON}    ${{sys.executable}}
Test Teardown     Stop Runtime

*** Variables ***
${ROOT}           ${CURDIR}/..

*** Test Cases ***
Server Starts Lazily On Its First Call
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Server State Should Be    fx    idle
    Call Tool    fx/echo    {"text": "hello"}
    Last Result Should Succeed
    Last Text Should Be    hello
    Server State Should Be    fx    running
    Server Counter Should Be    fx    calls    1

Bad Arguments Fail Before The Server Is Asked
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Call Tool    fx/add    {"a": 1, "b": 2}
    Last Text Should Be    3
    Call Tool    fx/add    {"a": "one", "b": 2}
    Last Result Should Fail With    validation    'one' is not of type 'integer'

Idle Server Stops And Leaves No Process
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    ...    idleTimeout=0.5
    Call Tool    fx/echo    {"text": "once"}
    Wait For Server State    fx    stopped    timeout=10
    No Server Process Should Be Left

Crashed Server Is Restarted By The Supervisor
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    ...    restartBackoff=0.05
    Call Tool    fx/echo    {"text": "before"}
    Kill Server Process    fx
    Wait Until Keyword Succeeds    15s    50ms    Server Counter Should Be    fx    restarts    1
    Wait For Server State    fx    running    timeout=15
    Call Tool    fx/echo    {"text": "after"}
    Last Text Should Be    after

A Failing Tool Gives A Classified Error
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Call Tool    fx/fail    {"message": "broken on purpose"}
    Last Result Should Fail With    server_error    broken on purpose

Unknown Namespace Is Not Found
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Call Tool    nope/echo    {"text": "x"}
    Last Result Should Fail With    not_found    nope

Everything Stops At Shutdown
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Call Tool    fx/echo    {"text": "x"}
    Stop Runtime
    No Server Process Should Be Left

Wait For Server State Takes Robot Time Strings
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Call Tool    fx/echo    {"text": "x"}
    Wait For Server State    fx    running    10s
    Wait For Server State    fx    running    1 min 30 s
    Wait For Server State    fx    running    timeout=2.5
    Run Keyword And Expect Error    server 'fx' is 'running' after 0.2 s, not 'stopped'
    ...    Wait For Server State    fx    stopped    200ms

No Server Process Should Be Left Fails When It Saw No Process
    Start Runtime With Server    fx    ${PYTHON}    -m    tests.servers.fixture_server    cwd=${ROOT}
    Run Keyword And Expect Error    no server process was seen since Start Runtime*
    ...    No Server Process Should Be Left
