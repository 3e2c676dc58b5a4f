# FLOCK_SANITIZE=ON instruments every target of the project with ASan + UBSan.
# Applied globally (before targets are declared) so libraries and tests agree.
if(FLOCK_SANITIZE)
  set(_flock_san_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_compile_options(${_flock_san_flags})
  add_link_options(${_flock_san_flags})
  message(STATUS "flock: building with AddressSanitizer + UndefinedBehaviorSanitizer")
endif()
