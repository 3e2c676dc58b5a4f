# FLOCK_SANITIZE instruments every target of the project:
#   OFF (default) | ON or address: AddressSanitizer + UndefinedBehaviorSanitizer
#   thread: ThreadSanitizer (for the engine's unit tests; MPI itself is not instrumented)
# Applied globally (before targets are declared) so libraries and tests agree.
string(TOLOWER "${FLOCK_SANITIZE}" _flock_sanitize)
if(_flock_sanitize STREQUAL "on" OR _flock_sanitize STREQUAL "address")
  set(_flock_san_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  message(STATUS "flock: building with AddressSanitizer + UndefinedBehaviorSanitizer")
elseif(_flock_sanitize STREQUAL "thread")
  set(_flock_san_flags -fsanitize=thread -fno-omit-frame-pointer)
  message(STATUS "flock: building with ThreadSanitizer")
elseif(NOT _flock_sanitize STREQUAL "off" AND NOT _flock_sanitize STREQUAL "")
  message(FATAL_ERROR "FLOCK_SANITIZE must be OFF, ON, address or thread (got '${FLOCK_SANITIZE}')")
endif()
if(_flock_san_flags)
  add_compile_options(${_flock_san_flags})
  add_link_options(${_flock_san_flags})
endif()
