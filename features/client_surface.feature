Feature: Resources, prompts, progress, sampling and subscriptions through the runtime
  As the developer of an agent host
  I want my host to use everything an MCP server offers, not only its tools
  So that I need no second MCP client beside the runtime

  Scenario: The host lists a server's resources and reads them
    Given a runtime with the surface server as "docs"
    When the host lists the resources of "docs"
    Then the resources include "surface://static/hello.txt" of type "text/plain"
    And the resources include "surface://static/pixel.png" of type "image/png"
    When the host reads "surface://static/hello.txt" from "docs"
    Then the host gets the text "Hello, surface!"
    When the host reads "surface://static/pixel.png" from "docs"
    Then the host gets a PNG image

  Scenario: Resources already listed are listed again without starting the server
    Given a runtime with the surface server as "docs"
    And the host has listed the resources of "docs" and stopped the server
    When the host lists the resources of "docs"
    Then the resources include "surface://static/hello.txt" of type "text/plain"
    And the server "docs" is still stopped

  Scenario: The host gets a prompt filled in with its arguments
    Given a runtime with the surface server as "docs"
    When the host gets the prompt "docs/greet" with {"name": "Ann", "style": "pirate"}
    Then the prompt's first message says "Say hello to Ann in a pirate style."

  Scenario: A prompt without its required argument is refused before the server is asked
    Given a runtime with the surface server as "docs"
    When the host gets the prompt "docs/greet" with {"style": "formal"}
    Then the prompt is refused as "validation" naming the argument "name"

  Scenario: The host follows the progress of a long call
    Given a runtime with the surface server as "docs"
    When the host calls "docs/progress" with {"steps": 4}, following its progress
    Then the call answers "done 4"
    And the host saw the progress 1, 2, 3, 4 of 4 in order, away from the event loop

  Scenario: A server allowed to sample asks the host's model
    Given a runtime with the surface server as "helper", allowed to sample a model that answers "forty-two"
    When the host calls "helper/sample" with {"prompt": "What is six times seven?"}
    Then the call answers "model host-model said: forty-two"
    And the model was asked "What is six times seven?" for "helper"

  Scenario: A server not allowed to sample never reaches the host's model
    Given a runtime with the surface server as "helper", not allowed to sample a model that answers "forty-two"
    When the host calls "helper/sample" with {"prompt": "What is six times seven?"}
    Then the call answers "not offered: sampling"
    And the model was never asked

  Scenario Outline: A subscription hears of changes until it is cancelled (<era>)
    Given a runtime with the surface server as "docs" speaking <era>
    When the host subscribes to "surface://counter" of "docs"
    And the counter of "docs" changes until the host hears of it
    Then the host heard that "surface://counter" changed
    When the host cancels the subscription
    Then later changes of "surface://counter" are not heard

    Examples:
      | era        |
      | legacy     |
      | 2026-07-28 |
